import { z } from 'zod';
import { InvokeAccepted, InvokeBody } from '../../src/schemas/jobs.js';
import { route } from '../route.js';

const NeuronSegment = z.object({ id: z.string().min(1).max(200) });

/** POST /v1/neurons/:id/invoke: starts a durable neuronRun; the caller polls or streams the job. */
export default [
  route({
    method: 'post', path: '/v1/neurons/:id/invoke', status: 202, brain: 'optional', params: NeuronSegment, body: InvokeBody, response: InvokeAccepted, tags: ['neurons'],
    handler: async ({ params, body, scope, services }) => {
      const r = await services.runs.invoke(scope, params.id, body);
      return { job_id: r.job._id, status: r.job.status, user_engram_id: r.userEngramId, trace_id: r.traceId };
    },
  }),
];
