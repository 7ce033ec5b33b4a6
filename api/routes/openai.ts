import { ChatCompletion, ChatCompletionBody, OpenAIModelList } from '../../src/runs/index.js';
import { completion, resolveModel, startRun, streamCompletion, turnOf, type OpenAiApi } from '../openai/chat.js';
import { listModels } from '../openai/models.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s): OpenAiApi => ({
  jobs: s.jobs,
  neurons: s.neurons,
  pathwayRuns: s.pathwayRuns,
  pathways: s.pathways,
  runs: s.runs,
  streams: s.streams,
  traces: s.traces,
  usage: s.usage,
}));

/**
 * The OpenAI-compatible endpoint (docs/openai-compatible.md): base URL `<api>/v1/openai` for any
 * OpenAI client. Models are the caller's neurons (by slug) and pathways (`pathway:<id>`); a chat
 * completion is an invoke (or a pathway execute) like any other, a job in GET /v1/jobs. Errors under
 * this prefix are OpenAI's `{ error: { message, type, param, code } }` (api/openai/errors.ts).
 */
export default [
  route({
    method: 'get',
    path: '/v1/openai/models',
    summary: 'List models (OpenAI-compatible)',
    brain: 'optional',
    response: OpenAIModelList,
    tags: ['openai'],
    description:
      'The active neurons the credential may invoke (by slug) and, with X-Brain-Id, the pathways of that brain (pathway:<id>), as OpenAI model objects',
    handler: async ({ scope, services }) => ({ object: 'list' as const, data: await listModels(services, scope) }),
  }),
  route({
    method: 'post',
    path: '/v1/openai/chat/completions',
    summary: 'Create a chat completion (OpenAI-compatible)',
    // Waits for the run (or streams it): no admission slot is held meanwhile, as for a job stream.
    kind: 'stream',
    brain: 'optional',
    body: ChatCompletionBody,
    response: ChatCompletion,
    tags: ['openai'],
    description:
      "Runs the neuron (or pathway:<id>) named by model as a job, exactly as an invoke; answers a chat.completion when it ends, or with stream: true chat.completion.chunk server-sent events from the job's tokens, then data: [DONE]",
    examples: {
      request: { model: 'helper', messages: [{ role: 'user', content: 'Summarise the open incidents' }] },
    },
    handler: async ({ body, scope, services, ctx }) => {
      const target = await resolveModel(services, scope, body.model);
      const run = await startRun(services, scope, target, turnOf(body, scope, target));
      ctx.set('x-cortex-job-id', run.jobId);
      if (run.traceId) ctx.set('x-cortex-trace-id', run.traceId);
      if (body.stream)
        return streamCompletion(services, scope, ctx, body.model, target, run, !!body.stream_options?.include_usage);
      return completion(services, scope, ctx, body.model, target, run);
    },
  }),
];
