import { z } from 'zod';
import { TERMINAL_STATES, Job, JobIdParams, JobList, JobListQuery, JobStreamQuery } from '../../src/jobs/index.js';
import { presentJob } from '../presenters/jobs.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';
import { endedAfter, resumeCursor, sseStream } from '../sse.js';

const route = areaRoutes((s) => ({ jobs: s.jobs, streams: s.streams }));

/** Jobs (stream entries and rules: docs/streams.md): status, list, token stream and cancel. Pathway routes add start/resume/input. */
export default [
  route({
    method: 'get',
    path: '/v1/jobs',
    summary: 'List jobs',
    query: JobListQuery,
    response: JobList,
    tags: ['jobs'],
    handler: async ({ query, scope, services }) => {
      const r = await services.jobs.list(scope, query);
      return {
        jobs: r.items.map((j) => presentJob(j)),
        ...presentPage(r, { hasMore: false, byCursor: query.cursor !== undefined }),
      };
    },
  }),
  route({
    method: 'get',
    path: '/v1/jobs/:jobId/status',
    summary: "Read a job's status and result",
    params: JobIdParams,
    response: Job,
    tags: ['jobs'],
    description:
      'Poll until status is completed or failed (waiting and paused wait for a human); result holds the answer',
    examples: {
      response: {
        job_id: '7b0c5d2e-3f41-4a8b-9c6d-1e2f3a4b5c6d',
        kind: 'neuron',
        status: 'completed',
        progress: 100,
        current_step: null,
        result: { text: 'Two incidents are open: …' },
        neuron_id: '2b3c4d5e-6f70-4a81-9b92-a3b4c5d6e7f8',
        pathway_id: null,
        pathway_version: null,
        receptor_id: null,
        trace_id: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
        parent_job_id: null,
        created_at: '2025-11-20T10:00:00.000Z',
        processed_at: '2025-11-20T10:00:00.040Z',
        finished_at: '2025-11-20T10:00:02.310Z',
      },
    },
    handler: async ({ params, scope, services }) =>
      presentJob(await services.jobs.status(scope, params.jobId), { withInput: true }),
  }),
  route({
    // The job as a resource: the same read as /status, where a REST client looks for it first.
    method: 'get',
    path: '/v1/jobs/:jobId',
    summary: 'Read a job',
    params: JobIdParams,
    response: Job,
    tags: ['jobs'],
    operationId: 'jobs.get',
    description: 'The job: the same answer as GET /v1/jobs/:jobId/status',
    handler: async ({ params, scope, services }) =>
      presentJob(await services.jobs.status(scope, params.jobId), { withInput: true }),
  }),
  route({
    method: 'get',
    path: '/v1/jobs/:jobId/stream',
    summary: "Stream a job's tokens and progress",
    kind: 'stream',
    params: JobIdParams,
    query: JobStreamQuery,
    tags: ['jobs'],
    description:
      'SSE: tokens and progress of a run; ends after complete or error. Resumed (after= or Last-Event-ID) past the end of a finished job: 204 No Content, so an EventSource stops reconnecting',
    handler: async ({ params, query, scope, services, ctx }) => {
      const key = services.jobs.streamKey(params.jobId);
      const after = resumeCursor(ctx, query.after);
      // The replay is read while the job's workspace is checked; nothing is sent unless the check passes.
      const backlog = services.streams.range(key, after);
      backlog.catch(() => undefined); // awaited (and its error answered) by the stream: only no unhandled rejection meanwhile
      await services.jobs.check(scope, params.jobId);
      const isFinished = async () => TERMINAL_STATES.includes((await services.jobs.get(scope, params.jobId)).status);
      // Resumed after the end of a finished job: 204, so an EventSource stops reconnecting.
      if (await endedAfter(services.streams, key, after, backlog, isFinished)) return undefined;
      return sseStream(ctx, {
        streams: services.streams,
        key,
        after,
        backlog,
        endOnTerminal: true,
        isFinished,
      });
    },
  }),
  route({
    method: 'post',
    path: '/v1/jobs/:jobId/cancel',
    summary: 'Cancel a job',
    params: JobIdParams,
    response: Job.extend({ cancelled: z.literal(true) }),
    tags: ['jobs'],
    description: '400 when the job is already completed or failed',
    handler: async ({ params, scope, services }) => ({
      ...presentJob(await services.jobs.cancel(scope, params.jobId)),
      cancelled: true as const,
    }),
  }),
];
