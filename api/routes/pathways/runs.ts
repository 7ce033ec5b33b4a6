import { z } from 'zod';
import { Intervention } from '../../../src/interventions/index.js';
import { JobAccepted, JobIdParams } from '../../../src/jobs/index.js';
import {
  ExecuteBody,
  JobCreateBody,
  JobInputBody,
  PathwayRefParams,
  ReplayBody,
  ResumeBody,
} from '../../../src/pathways/index.js';
import { presentIntervention } from '../../presenters/interventions.js';
import { areaRoutes } from '../../route.js';

const route = areaRoutes((s) => ({ pathwayRuns: s.pathwayRuns }));

const InterventionAnswered = z.object({ job_id: z.string(), intervention: Intervention });

/** Starting pathway runs and answering them while they wait (docs/streams.md for their job streams). */
export default [
  route({
    method: 'post',
    path: '/v1/pathways/:id/execute',
    summary: 'Run a pathway',
    status: 202,
    params: PathwayRefParams,
    body: ExecuteBody,
    response: JobAccepted,
    tags: ['pathways'],
    examples: {
      request: { input: { ticket: 'Refund order 1234' } },
      response: {
        job_id: '7b0c5d2e-3f41-4a8b-9c6d-1e2f3a4b5c6d',
        status: 'pending',
        trace_id: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
      },
    },
    description: 'Runs the pathway (head version unless pathway_version is given) as a pathwayRun workflow',
    handler: async ({ params, body, scope, services }) => {
      const job = await services.pathwayRuns.execute(scope, params.id, body);
      return { job_id: job._id, status: 'pending' as const, trace_id: job.traceId };
    },
  }),
  route({
    method: 'post',
    path: '/v1/jobs',
    summary: 'Run a stored or inline pathway',
    brain: 'optional',
    body: JobCreateBody,
    response: JobAccepted,
    tags: ['jobs'],
    description: 'Starts a stored (pathway_id) or inline pathway with input or data',
    handler: async ({ body, scope, services }) => {
      const job = await services.pathwayRuns.createJob(scope, body);
      return { job_id: job._id, status: 'pending' as const, trace_id: job.traceId };
    },
  }),
  route({
    method: 'post',
    path: '/v1/jobs/:jobId/replay',
    summary: 'Replay an ended pathway run from one of its nodes',
    status: 202,
    brain: 'optional',
    params: JobIdParams,
    body: ReplayBody,
    response: JobAccepted,
    tags: ['jobs'],
    examples: {
      request: { from_node: 'notify', input: { amount: 50 } },
      response: {
        job_id: '2d4f6a8c-1e3b-4d5f-8a7c-9e0b1c2d3e4f',
        status: 'pending',
        trace_id: 'f1e2d3c4-b5a6-4978-8e7d-6c5b4a392817',
      },
    },
    description:
      'A new run of the same pathway version that takes the recorded value of every node visited before ' +
      'from_node (they do not run again), then runs from that node; input, when given, flows into it. ' +
      'The new job carries replay_of and from_node. 400 naming from_node for a node the pathway lacks or the ' +
      'run never reached; 409 for a run that has not ended',
    handler: async ({ params, body, scope, services }) => {
      const job = await services.pathwayRuns.replay(scope, params.jobId, body);
      return { job_id: job._id, status: 'pending' as const, trace_id: job.traceId };
    },
  }),
  route({
    method: 'post',
    path: '/v1/jobs/:jobId/input',
    summary: 'Answer the intervention a job waits on',
    params: JobIdParams,
    body: JobInputBody,
    response: InterventionAnswered,
    tags: ['jobs'],
    description: 'Answers the intervention the job waits on; 400 when it does not match',
    handler: async ({ params, body, scope, services }) => ({
      job_id: params.jobId,
      intervention: presentIntervention(await services.pathwayRuns.input(scope, params.jobId, body)),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/jobs/:jobId/resume',
    summary: 'Resume a paused job',
    params: JobIdParams,
    body: ResumeBody,
    response: InterventionAnswered,
    tags: ['jobs'],
    description: 'Resumes a paused run; a run waiting for approval needs an action',
    handler: async ({ params, body, scope, services }) => ({
      job_id: params.jobId,
      intervention: presentIntervention(await services.pathwayRuns.resume(scope, params.jobId, body)),
    }),
  }),
];
