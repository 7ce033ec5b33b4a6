import { ApplicationFailure } from '@temporalio/activity';
import { AppError } from '../src/errors.js';
import { LlmError } from '../src/llm/errors.js';

/** A 4xx domain error never succeeds on retry; anything else is left for Temporal to retry. */
export async function permanentOn4xx<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof AppError && e.status < 500) throw ApplicationFailure.nonRetryable(e.message, e.code);
    if (e instanceof LlmError && !e.retryable) throw ApplicationFailure.nonRetryable(e.message, 'LLM_ERROR');
    throw e;
  }
}
