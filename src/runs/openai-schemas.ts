import { z } from 'zod';

/**
 * The OpenAI-compatible surface (`/v1/openai`, docs/openai-compatible.md): the request and response
 * shapes of OpenAI's chat completions and models APIs, as far as the platform serves them. Request
 * fields the platform does not act on are accepted and ignored (a neuron's own configuration decides
 * model, temperature, tools and limits); the ones it cannot honour are refused with a 400.
 */

/** One part of a message's content: text is read; any other kind of part is refused. */
const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

export const ChatMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(ContentPart), z.null()]).optional(),
  name: z.string().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ChatCompletionBody = z
  .looseObject({
    model: z.string().min(1).max(300).meta({
      description: 'a neuron slug or id, or `pathway:<pathway id or exact name>` (GET /v1/openai/models lists them)',
    }),
    messages: z.array(ChatMessage).min(1).max(1000).meta({
      description:
        "the conversation; the last message must be the user's. Earlier messages are folded into that message as context, unless metadata.trace_id or user names a trace to continue",
    }),
    stream: z.boolean().nullish(),
    stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
    user: z.string().min(1).max(200).nullish().meta({
      description: 'continues this end user’s conversation with the model: one trace per (user, model)',
    }),
    metadata: z.record(z.string(), z.string()).nullish().meta({
      description:
        '`trace_id` (a UUID) continues that trace; `multitask_strategy` (reject, enqueue, interrupt, rollback) says what a run on a trace whose run has not ended does (docs/neurons.md); other keys are ignored',
    }),
    n: z.number().int().nullish(),
    tools: z.array(z.unknown()).nullish(),
  })
  .meta({ id: 'OpenAIChatCompletionBody' });
export type ChatCompletionBody = z.infer<typeof ChatCompletionBody>;

export const OpenAIUsage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
export type OpenAIUsage = z.infer<typeof OpenAIUsage>;

export const ChatCompletion = z
  .object({
    id: z.string().meta({ description: '`chatcmpl-<job id>`: the run is that job' }),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({ role: z.literal('assistant'), content: z.string(), refusal: z.null() }),
        logprobs: z.null(),
        finish_reason: z.literal('stop'),
      }),
    ),
    usage: OpenAIUsage,
  })
  .meta({ id: 'OpenAIChatCompletion' });
export type ChatCompletion = z.infer<typeof ChatCompletion>;

const OpenAIModel = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
});
export const OpenAIModelList = z
  .object({ object: z.literal('list'), data: z.array(OpenAIModel) })
  .meta({ id: 'OpenAIModelList' });

export const OpenAIErrorBody = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'OpenAIErrorBody', description: 'the error body of every /v1/openai route (OpenAI’s shape)' });
export type OpenAIErrorBody = z.infer<typeof OpenAIErrorBody>;
