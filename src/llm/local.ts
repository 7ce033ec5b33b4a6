import { validationError } from '../kernel/errors.js';
import { LlmAbortError } from './errors.js';
import type { ChatMessage, ChatProvider, ChatRequest, ChatResult, TokenSink } from './types.js';

/** Prefix of every `local/echo` answer, so nobody mistakes it for a real model's output. */
export const LOCAL_ECHO_PREFACE = '[local/echo] ';

const MODELS = ['echo', 'json'] as const;

/**
 * A deterministic, offline stand-in for a chat model, for development, demos and tests on a
 * machine without an API key or network. It has no intelligence and pretends none:
 * - `local/echo` answers `[local/echo] ` followed by the last user message, streamed word by word;
 * - `local/json` answers the JSON object `{"echo": <last user message>, "model": "local/json"}`
 *   as text, for structured-completion paths that parse JSON.
 * It never calls tools, counts usage as whitespace-separated words (cost is 0, see pricing.ts)
 * and honours `maxTokens` by cutting the answer after that many words (finishReason `length`).
 */
export function createLocalProvider(): ChatProvider {
  return {
    name: 'local',
    models: () => [...MODELS],
    async chat(req: ChatRequest, onToken?: TokenSink): Promise<ChatResult> {
      if (!(MODELS as readonly string[]).includes(req.model)) {
        throw validationError(
          `Unknown local model "${req.model}"; available: ${MODELS.map((m) => `local/${m}`).join(', ')}`,
        );
      }
      throwIfAborted(req.signal);
      req.onChunk?.(); // answers at once: it has started answering
      const last = lastUserMessage(req.messages);
      const full =
        req.model === 'json' ? JSON.stringify({ echo: last, model: 'local/json' }) : LOCAL_ECHO_PREFACE + last;

      let pieces = splitWords(full);
      let finishReason = 'stop';
      if (req.maxTokens !== undefined && pieces.length > req.maxTokens) {
        pieces = pieces.slice(0, Math.max(0, req.maxTokens));
        finishReason = 'length';
      }
      const text = pieces.join('');
      if (onToken) {
        for (const piece of pieces) {
          await onToken(piece);
          throwIfAborted(req.signal);
        }
      }
      const inputTokens = req.messages.reduce((n, m) => n + countWords(m.content), 0);
      const outputTokens = countWords(text);
      return {
        text,
        toolCalls: [],
        usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
        finishReason,
        provider: 'local',
        model: req.model,
      };
    },
  };
}

function lastUserMessage(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return messages[i].content;
  return '';
}

/** Splits at each whitespace→word boundary, keeping the whitespace, so the pieces join back exactly. */
function splitWords(text: string): string[] {
  return text === '' ? [] : text.split(/(?<=\s)(?=\S)/);
}

function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new LlmAbortError('local', signal.reason);
}
