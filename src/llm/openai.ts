import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { validationError } from '../kernel/errors.js';
import { LlmAbortError, LlmError, toLlmError } from './errors.js';
import { pricedModels } from './pricing.js';
import {
  estimateTokens,
  type ChatMessage,
  type ChatProvider,
  type ChatRequest,
  type ChatResult,
  type TokenSink,
  type ToolCall,
  type ToolSpec,
} from './types.js';

const OPENAI_API = 'https://api.openai.com/v1';

/** Settings of an OpenAI-compatible endpoint (OpenAI itself, vLLM, Ollama, LiteLLM, a test server). */
export interface OpenAIProviderOptions {
  /** Endpoint root ending in `/v1`; defaults to api.openai.com. */
  baseURL?: string;
  /** Many self-hosted endpoints need no key; the SDK insists on one, so a placeholder is sent. */
  apiKey?: string;
  /** Registry name; a second OpenAI-compatible endpoint can be registered under another name. */
  name?: string;
  /** Extra model names to advertise (e.g. the configured default model of a self-hosted endpoint). */
  models?: string[];
  /**
   * Which field carries `maxTokens`. api.openai.com wants `max_completion_tokens` (its reasoning
   * models reject `max_tokens`); many compatible servers only know `max_tokens`. Defaults to the
   * former without a baseURL and the latter with one.
   */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens';
}

/**
 * Chat through the official `openai` SDK, against any OpenAI-compatible endpoint. The SDK is
 * created with `maxRetries: 0` because Temporal retries the whole activity (with its own backoff
 * and visibility); SDK retries inside an attempt would double-count time and tokens. Every call
 * streams (`stream_options.include_usage` for token counts), so one code path serves streamed
 * and unstreamed callers.
 */
export function createOpenAIProvider(opts: OpenAIProviderOptions = {}): ChatProvider {
  const name = opts.name ?? 'openai';
  // baseURL and apiKey are passed explicitly so the SDK never reads OPENAI_* from process.env
  // (src/kernel/config.ts is the only reader of the environment).
  const client = new OpenAI({ baseURL: opts.baseURL ?? OPENAI_API, apiKey: opts.apiKey ?? 'unused', maxRetries: 0 });
  const maxTokensField = opts.maxTokensField ?? (opts.baseURL ? 'max_tokens' : 'max_completion_tokens');
  const advertised = [...new Set([...pricedModels('openai'), ...(opts.models ?? [])])];

  return {
    name,
    models: () => [...advertised],
    async chat(req: ChatRequest, onToken?: TokenSink): Promise<ChatResult> {
      const params: ChatCompletionCreateParamsStreaming = {
        model: req.model,
        messages: req.messages.map(toOpenAIMessage),
        stream: true,
        stream_options: { include_usage: true },
      };
      if (req.tools?.length) params.tools = req.tools.map(toOpenAITool);
      if (req.temperature !== undefined) params.temperature = req.temperature;
      if (req.maxTokens !== undefined) params[maxTokensField] = req.maxTokens;
      if (req.jsonSchema)
        params.response_format = {
          type: 'json_schema',
          json_schema: { name: req.jsonSchema.name, schema: req.jsonSchema.schema, strict: true },
        };
      else if (req.responseFormat === 'json') params.response_format = { type: 'json_object' };

      try {
        const stream = await client.chat.completions.create(params, { signal: req.signal });
        const acc = new StreamAccumulator();
        for await (const chunk of stream) {
          req.onChunk?.();
          const delta = acc.add(chunk);
          if (delta && onToken) await onToken(delta); // awaited: a slow sink slows the read
          if (req.signal?.aborted) break;
        }
        // The SDK ends the iteration quietly when the signal aborts while it waits for the next
        // chunk, so a partial answer must not be returned as if it were complete.
        if (req.signal?.aborted) {
          stream.controller.abort();
          throw new LlmAbortError(name, req.signal.reason);
        }
        // A connection that closes before the final chunk is a failed call (retryable), never a short answer.
        if (!acc.finished)
          throw new LlmError(name, `${name}: the stream ended before the model finished`, { retryable: true });
        return acc.result(name, req);
      } catch (err) {
        throw toLlmError(name, err, req.signal);
      }
    },
  };
}

/** Maps a neutral message; a tool result without the id of its call is a caller bug (400). */
function toOpenAIMessage(m: ChatMessage): ChatCompletionMessageParam {
  switch (m.role) {
    case 'system':
      return { role: 'system', content: m.content };
    case 'user':
      return m.name ? { role: 'user', content: m.content, name: m.name } : { role: 'user', content: m.content };
    case 'assistant':
      if (!m.toolCalls?.length) return { role: 'assistant', content: m.content };
      return {
        role: 'assistant',
        // OpenAI accepts null content beside tool calls; an empty string is rejected by some servers.
        content: m.content === '' ? null : m.content,
        tool_calls: m.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      };
    case 'tool':
      if (!m.toolCallId) throw validationError('A tool message needs toolCallId');
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  }
}

function toOpenAITool(t: ToolSpec): ChatCompletionTool {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } };
}

/**
 * Folds stream chunks into text, tool calls and usage. Tool calls arrive as deltas keyed by
 * `index`: the first carries id and name, later ones append pieces of the arguments text.
 */
class StreamAccumulator {
  private text = '';
  private finishReason = '';
  private usage: ChatCompletionChunk['usage'] = null;
  private readonly calls = new Map<number, ToolCall>();

  /** Whether a chunk carried a finish_reason (a complete answer). */
  get finished(): boolean {
    return this.finishReason !== '';
  }

  /** Returns the text delta of this chunk ('' if none). */
  add(chunk: ChatCompletionChunk): string {
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) return ''; // the usage-only chunk has no choices
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    for (const d of choice.delta.tool_calls ?? []) {
      const call = this.calls.get(d.index) ?? { id: '', name: '', arguments: '' };
      if (d.id) call.id = d.id;
      if (d.function?.name) call.name = d.function.name;
      if (d.function?.arguments) call.arguments += d.function.arguments;
      this.calls.set(d.index, call);
    }
    const delta = choice.delta.content ?? '';
    this.text += delta;
    return delta;
  }

  result(provider: string, req: ChatRequest): ChatResult {
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => ({ id: c.id || `call_${index}`, name: c.name, arguments: c.arguments || '{}' }));
    let inputTokens: number;
    let outputTokens: number;
    let cachedInputTokens = 0;
    if (this.usage) {
      inputTokens = this.usage.prompt_tokens;
      outputTokens = this.usage.completion_tokens;
      cachedInputTokens = this.usage.prompt_tokens_details?.cached_tokens ?? 0;
    } else {
      // The server sent no usage (some OpenAI-compatible servers ignore stream_options): estimate
      // ceil(chars / 4) so cost rollups are approximate rather than silently zero.
      inputTokens = estimateTokens(
        req.messages.map((m) => m.content + (m.toolCalls ?? []).map((c) => c.name + c.arguments).join('')).join(''),
      );
      outputTokens = estimateTokens(this.text + toolCalls.map((c) => c.name + c.arguments).join(''));
    }
    return {
      text: this.text,
      toolCalls,
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, cachedInputTokens },
      finishReason: this.finishReason || (toolCalls.length ? 'tool_calls' : 'stop'),
      provider,
      model: req.model,
    };
  }
}
