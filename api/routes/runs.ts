import { z } from 'zod';
import { InvokeAccepted, InvokeBody } from '../../src/jobs/index.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ runs: s.runs }));

const NeuronSegment = z.object({ id: z.string().min(1).max(200) });

/** POST /v1/neurons/:id/invoke: starts a durable neuronRun; the caller polls or streams the job. */
export default [
  route({
    method: 'post',
    path: '/v1/neurons/:id/invoke',
    summary: 'Invoke a neuron',
    status: 202,
    brain: 'optional',
    params: NeuronSegment,
    body: InvokeBody,
    response: InvokeAccepted,
    tags: ['neurons'],
    description:
      'Starts a durable neuronRun and answers 202 at once; poll jobs.status or stream jobs.stream with the job_id',
    examples: {
      request: { message: 'Summarise the open incidents', client_nonce: 'msg-42' },
      response: {
        job_id: '7b0c5d2e-3f41-4a8b-9c6d-1e2f3a4b5c6d',
        status: 'pending',
        user_engram_id: '0f1e2d3c-4b5a-4697-8877-665544332211',
        trace_id: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
      },
    },
    handler: async ({ params, body, scope, services }) => {
      const r = await services.runs.invoke(scope, params.id, body);
      return { job_id: r.job._id, status: r.job.status, user_engram_id: r.userEngramId, trace_id: r.traceId };
    },
  }),
];
