import type Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  RawMessageStreamEvent,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import { validationError } from '../kernel/errors.js';
import { LlmAbortError, LlmError, toLlmError } from './errors.js';
import { pricedModels } from './pricing.js';
import type { ChatMessage, ChatProvider, ChatRequest, ChatResult, TokenSink, ToolCall, ToolSpec } from './types.js';

const ANTHROPIC_API = 'https://api.anthropic.com';

/** Anthropic requires max_tokens on every request; this is used when the caller sets none. */
const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** The Messages API has no JSON mode; a system instruction asks for one object instead. */
const JSON_INSTRUCTION = 'Respond with a single JSON object and nothing else: no prose, no code fences.';

/** Settings of the Anthropic Messages API. */
export interface AnthropicProviderOptions {
  apiKey?: string;
  /** Defaults to api.anthropic.com; set for a proxy or gateway. */
  baseURL?: string;
  /** Extra model names to advertise beside the priced ones. */
  models?: string[];
}

/**
 * Chat through the official `@anthropic-ai/sdk` (Messages API, raw event stream). As with
 * OpenAI, `maxRetries: 0` leaves retries to Temporal. The neutral transcript is reshaped the way
 * the API wants it: system messages go to the separate `system` field, assistant tool calls
 * become `tool_use` blocks, and tool results become `tool_result` blocks in a user message
 * (consecutive ones merged, since all results for one assistant turn must share a message).
 * `temperature` is ignored (the API version this SDK speaks has none); `responseFormat: 'json'`
 * becomes a system instruction, since the Messages API has no JSON mode.
 */
export function createAnthropicProvider(opts: AnthropicProviderOptions = {}): ChatProvider {
  const name = 'anthropic';
  // The SDK is loaded at the first call, so a process that never calls Anthropic never holds it.
  // Explicit values (null = none) keep the SDK from reading ANTHROPIC_* from process.env.
  let client: Promise<Anthropic> | undefined;
  const connect = (): Promise<Anthropic> =>
    (client ??= import('@anthropic-ai/sdk').then(
      ({ default: Sdk }) =>
        new Sdk({
          apiKey: opts.apiKey ?? null,
          authToken: null,
          baseURL: opts.baseURL ?? ANTHROPIC_API,
          maxRetries: 0,
        }),
    ));
  const advertised = [...new Set([...pricedModels('anthropic'), ...(opts.models ?? [])])];

  return {
    name,
    models: () => [...advertised],
    async chat(req: ChatRequest, onToken?: TokenSink): Promise<ChatResult> {
      const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content);
      if (req.responseFormat === 'json' || req.jsonSchema) system.push(JSON_INSTRUCTION);
      // The Messages API has no schema mode: the schema goes into the instruction (callers validate the answer).
      if (req.jsonSchema)
        system.push(`The JSON object must match this JSON Schema:\n${JSON.stringify(req.jsonSchema.schema)}`);
      const params: MessageCreateParamsStreaming = {
        model: req.model,
        max_tokens: req.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
        messages: toAnthropicMessages(req.messages),
        stream: true,
      };
      if (system.length) params.system = system.join('\n\n');
      if (req.tools?.length) params.tools = req.tools.map(toAnthropicTool);
      // req.temperature is not sent: the Messages API of this SDK version (1.x) no longer has a
      // sampling temperature (MessageCreateParams has no such field), so it is ignored here.

      try {
        const stream = await (await connect()).messages.create(params, { signal: req.signal });
        const acc = new EventAccumulator();
        for await (const event of stream) {
          req.onChunk?.();
          const delta = acc.add(event);
          if (delta && onToken) await onToken(delta); // awaited: backpressure on the reader
          if (req.signal?.aborted) break;
        }
        // The SDK ends the iteration quietly when the signal aborts while it waits for the next
        // chunk, so a partial answer must not be returned as if it were complete.
        if (req.signal?.aborted) {
          stream.controller.abort();
          throw new LlmAbortError(name, req.signal.reason);
        }
        // A connection that closes before the stop reason is a failed call (retryable), never a short answer.
        if (!acc.finished)
          throw new LlmError(name, `${name}: the stream ended before the model finished`, { retryable: true });
        return acc.result(name, req.model);
      } catch (err) {
        throw toLlmError(name, err, req.signal);
      }
    },
  };
}

/** Neutral transcript → Messages API turns (system messages are handled separately). */
function toAnthropicMessages(messages: ChatMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const prev = out[out.length - 1];
    // The API wants alternating turns; merge a run of same-role messages into one.
    if (prev && prev.role === role && Array.isArray(prev.content)) prev.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        break;
      case 'user':
        push('user', m.content ? [{ type: 'text', text: m.content }] : []);
        break;
      case 'assistant': {
        const blocks: ContentBlockParam[] = m.content ? [{ type: 'text', text: m.content }] : [];
        for (const c of m.toolCalls ?? [])
          blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: parseArguments(c.arguments) });
        push('assistant', blocks);
        break;
      }
      case 'tool':
        if (!m.toolCallId) throw validationError('A tool message needs toolCallId');
        push('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content }]);
        break;
    }
  }
  return out;
}

/** tool_use.input must be an object; arguments the model once produced badly become `{}`. */
function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function toAnthropicTool(t: ToolSpec): Tool {
  return { name: t.name, description: t.description, input_schema: { ...t.parameters, type: 'object' } };
}

/**
 * Folds raw stream events into text, tool calls and usage. A `tool_use` block starts with id
 * and name; its input arrives as `input_json_delta` pieces of JSON text for the same index.
 * Usage: input tokens come with message_start, the cumulative output count with message_delta.
 */
class EventAccumulator {
  private text = '';
  private stopReason = '';
  private inputTokens = 0;
  private outputTokens = 0;
  private cachedInputTokens = 0;
  private readonly calls = new Map<number, ToolCall>();

  /** Whether a message_delta carried the stop reason (a complete answer). */
  get finished(): boolean {
    return this.stopReason !== '';
  }

  /** Returns the text delta of this event ('' if none). */
  add(event: RawMessageStreamEvent): string {
    switch (event.type) {
      case 'message_start': {
        const u = event.message.usage;
        this.inputTokens = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
        this.cachedInputTokens = u.cache_read_input_tokens ?? 0;
        this.outputTokens = u.output_tokens;
        return '';
      }
      case 'content_block_start':
        if (event.content_block.type === 'tool_use') {
          this.calls.set(event.index, { id: event.content_block.id, name: event.content_block.name, arguments: '' });
        } else if (event.content_block.type === 'text' && event.content_block.text) {
          this.text += event.content_block.text;
          return event.content_block.text;
        }
        return '';
      case 'content_block_delta':
        if (event.delta.type === 'text_delta') {
          this.text += event.delta.text;
          return event.delta.text;
        }
        if (event.delta.type === 'input_json_delta') {
          const call = this.calls.get(event.index);
          if (call) call.arguments += event.delta.partial_json;
        }
        return '';
      case 'message_delta': {
        const u = event.usage;
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        this.outputTokens = u.output_tokens;
        if (u.input_tokens != null) {
          this.inputTokens = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
        }
        return '';
      }
      default:
        return '';
    }
  }

  result(provider: string, model: string): ChatResult {
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({ ...c, arguments: c.arguments || '{}' }));
    return {
      text: this.text,
      toolCalls,
      usage: {
        inputTokens: this.inputTokens,
        outputTokens: this.outputTokens,
        totalTokens: this.inputTokens + this.outputTokens,
        cachedInputTokens: this.cachedInputTokens,
      },
      finishReason: this.stopReason || (toolCalls.length ? 'tool_use' : 'end_turn'),
      provider,
      model,
    };
  }
}
