/**
 * Provider-neutral failures of a model call. Activities look only at `retryable` (and the
 * `AbortError` name) to decide between a Temporal retry, a non-retryable failure and a
 * cancellation, without importing either SDK's error classes.
 */

/**
 * A model call failed. `status` is the upstream HTTP status when there was one; `retryable` is
 * false for client errors that cannot succeed on retry (bad request, auth, unknown model) and
 * true for rate limits, timeouts, 5xx and network failures.
 */
export class LlmError extends Error {
  readonly provider: string;
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** How long the provider asked us to wait before retrying (`Retry-After` / `retry-after-ms`), when it said. */
  readonly retryAfterMs: number | undefined;

  constructor(
    provider: string,
    message: string,
    opts: { status?: number; retryable: boolean; cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, { cause: opts.cause });
    this.name = 'LlmError';
    this.provider = provider;
    this.status = opts.status;
    this.retryable = opts.retryable;
    this.retryAfterMs = opts.retryAfterMs;
  }
}

/**
 * The caller aborted the call (its AbortSignal fired). Named `AbortError` because the Temporal
 * activity worker reports an activity that throws an `AbortError` after cancellation as
 * cancelled rather than failed. Deliberately not an LlmError, so code that maps LlmErrors to
 * (non-)retryable failures lets a cancellation pass through untouched.
 */
export class LlmAbortError extends Error {
  readonly provider: string;
  /** A cancelled call is never retried by the adapter's callers. */
  readonly retryable = false;

  constructor(provider: string, cause?: unknown) {
    super(`${provider}: request aborted`, { cause });
    this.name = 'AbortError';
    this.provider = provider;
  }
}

/** Statuses worth retrying: timeouts, lock conflicts, rate limits and server faults. */
function isRetryableStatus(status: number | undefined): boolean {
  if (status === undefined) return true; // no response at all: connection or DNS failure
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * Turns whatever an SDK threw into an LlmError. Both official SDKs expose `status` on their
 * APIError; errors without one are network failures. An aborted signal wins over everything,
 * since the SDKs report an abort in several shapes.
 */
export function toLlmError(provider: string, err: unknown, signal?: AbortSignal): LlmError | LlmAbortError {
  if (err instanceof LlmError || err instanceof LlmAbortError) return err;
  if (signal?.aborted) return new LlmAbortError(provider, err);
  const status = statusOf(err);
  const detail = err instanceof Error ? err.message : String(err);
  return new LlmError(provider, `${provider}: ${detail}`, {
    status,
    retryable: isRetryableStatus(status),
    cause: err,
    retryAfterMs: retryAfterOf(err),
  });
}

/**
 * The wait a provider asked for: `retry-after-ms` (OpenAI), else `Retry-After` in seconds or as
 * an HTTP date. Capped at 10 minutes; undefined when absent or unreadable.
 */
function retryAfterOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null || !('headers' in err)) return undefined;
  const h = (err as { headers: unknown }).headers;
  const get = (name: string): string | undefined => {
    if (h && typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
    if (h && typeof h === 'object') {
      const v = (h as Record<string, unknown>)[name];
      return typeof v === 'string' ? v : undefined;
    }
    return undefined;
  };
  const ms = Number(get('retry-after-ms'));
  let wait: number | undefined = Number.isFinite(ms) && ms > 0 ? ms : undefined;
  const ra = get('retry-after');
  if (wait === undefined && ra) {
    const s = Number(ra);
    wait = Number.isFinite(s) ? s * 1000 : Date.parse(ra) - Date.now();
  }
  if (wait === undefined || !Number.isFinite(wait) || wait < 0) return undefined;
  return Math.min(wait, 600_000);
}

function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null || !('status' in err)) return undefined;
  const { status } = err as { status: unknown };
  return typeof status === 'number' ? status : undefined;
}
