/**
 * Provider-neutral chat types. Workflows, activities and services speak only these, so a
 * neuron can switch between `openai/…`, `anthropic/…` and `local/…` by changing its model id,
 * and a model turn's result is plain JSON that Temporal can record in history.
 */

/**
 * One tool invocation requested by the model. `arguments` stays JSON *text*, as providers send
 * it: the tool runner parses and validates it against the tool's schema, and a malformed string
 * is the model's mistake to report back, not ours to hide.
 */
export interface ToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments object. */
  arguments: string;
}

/**
 * One message of a conversation. `role: 'tool'` carries a tool result and must name the call it
 * answers in `toolCallId`; an assistant message that asked for tools lists them in `toolCalls`,
 * so a transcript can be replayed to any provider.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  /** Optional author name (user) or tool name (tool result). */
  name?: string;
}

/** A JSON-schema object describing a tool's arguments (the `parameters` of a function tool). */
export type JsonSchema = Record<string, unknown>;

/** A tool the model may call; reflexes are turned into these before a model turn. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** One model turn, with the provider already stripped from the model id by the registry. */
export interface ChatRequest {
  /** The model part of `provider/model`, e.g. `gpt-4o-mini`. */
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  temperature?: number;
  maxTokens?: number;
  /** `json` asks the provider for a single JSON object (structured completion nodes). */
  responseFormat?: 'text' | 'json';
  /**
   * Structured output: the answer must be one JSON object matching this schema (implies
   * `responseFormat: 'json'`). OpenAI-compatible endpoints get `response_format: json_schema`
   * (strict); providers without it get the schema as an instruction. Callers still validate.
   */
  jsonSchema?: { name: string; schema: JsonSchema };
  /** Aborts the request, e.g. the Temporal activity's cancellation signal. */
  signal?: AbortSignal;
  /** Called on each streamed chunk (text or tool-call deltas): the model has started answering. */
  onChunk?: () => void;
}

/** Token counts of one model turn; they feed usage rollups and costOf(). */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** The part of inputTokens the provider served from its prompt cache (billed at the cached price). */
  cachedInputTokens?: number;
}

/** The outcome of one model turn, serialisable as an activity result. */
export interface ChatResult {
  text: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  /** The provider's own reason (`stop`, `tool_calls`, `end_turn`, `length`, …). */
  finishReason: string;
  provider: string;
  /** The model part that was asked for (without the provider). */
  model: string;
}

/**
 * Receives streamed text in order. The provider awaits each call before reading further, so a
 * slow consumer (a Redis XADD) applies backpressure instead of buffering without bound.
 */
export type TokenSink = (delta: string) => void | Promise<void>;

/**
 * What every model backend implements. Streaming is always used when `onToken` is given; the
 * returned result still carries the whole text, so callers never reassemble tokens themselves.
 */
export interface ChatProvider {
  /** Registry name, the `provider` part of a model id. */
  name: string;
  /** Model names (without provider) this provider advertises in GET /v1/config/models. */
  models(): string[];
  chat(req: ChatRequest, onToken?: TokenSink): Promise<ChatResult>;
}

/**
 * Rough token estimate (about four characters per token for English text). Used only where a
 * backend reports no usage, so that rollups are never silently zero.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
