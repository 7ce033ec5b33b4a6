import { ApplicationFailure } from '@temporalio/activity';
import { AppError } from '../src/kernel/errors.js';
import { LlmError } from '../src/llm/errors.js';

/**
 * Maps a service failure to what Temporal should do with it: a 4xx domain error or a provider's
 * 4xx (other than 408/409/429) never succeeds on retry and fails the run with the provider's
 * message; a provider's 429/5xx with `Retry-After` is retried after that wait (nextRetryDelay
 * overrides the backoff for this one retry); anything else is retried with the activity's backoff.
 */
export async function permanentOn4xx<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof AppError && e.status < 500) throw ApplicationFailure.nonRetryable(e.message, e.code);
    if (e instanceof LlmError && !e.retryable) throw ApplicationFailure.nonRetryable(e.message, 'LLM_ERROR');
    if (e instanceof LlmError && e.retryAfterMs !== undefined) {
      throw ApplicationFailure.create({
        message: e.message,
        type: 'LLM_RETRY_AFTER',
        nextRetryDelay: Math.max(100, e.retryAfterMs),
      });
    }
    throw e;
  }
}
