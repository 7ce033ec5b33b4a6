import type { Redis } from '../kernel/redis.js';
import { AppError, type ErrorCode } from '../kernel/errors.js';
import { LlmError } from '../llm/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { ModelTurnOutcome } from '../temporal/definitions.js';
import { bestEffort } from '../kernel/best-effort.js';

/**
 * The first model turn of an invoke, started by the API (docs/decisions.md, "The first turn
 * starts in the API"). The API answers 202 only once the workflow is started, so the run is as
 * durable as before; what changes is who makes the first provider call: the API begins it as soon
 * as the run is prepared, instead of after a workflow task and an activity dispatch. The
 * workflow's first `modelTurn` activity then adopts that call's outcome.
 *
 * The hand-over is one Redis key per job:
 * - `running`: the API claimed the turn and is streaming it; it renews the lease (LEASE_MS) while
 *   the call is alive, so a dead API process lets the key lapse within LEASE_MS;
 * - `{"done": outcome}`: the turn's text, tool calls and usage are stored (run step, ledger) and
 *   this is what the activity returns to the workflow;
 * - `{"failed": why}`, or no key at all for a run whose context says the API claimed it: the
 *   activity runs the turn itself as a *new attempt* (its `reset` fences off every token the API's
 *   attempt wrote, docs/streams.md rule 3), so a half-streamed answer is never spliced with
 *   another. Two failures are the activity's own instead: a permanent one (a provider 4xx, a
 *   budget that fails the run) fails it as if the activity had made the call, and a provider's
 *   Retry-After delays its retry (activities/failures.ts), so the API's turn is not a way around either.
 */
export const FIRST_TURN_LEASE_MS = 3_000;
/** How long a finished turn's outcome waits for its workflow to read it. */
const OUTCOME_TTL_MS = 15 * 60_000;
/** The waiting activity looks again after this long, doubling up to MAX_POLL_MS. */
const FIRST_POLL_MS = 10;
const MAX_POLL_MS = 200;
/** How long an API shutting down waits for the turns it aborts to record that they failed. */
const DRAIN_MS = 2_000;

/** Why the API's turn failed, as much as the activity needs to fail or retry the same way. */
interface Failure {
  kind: 'llm' | 'app' | 'other';
  message: string;
  provider?: string;
  status?: number;
  code?: ErrorCode;
  retryable?: boolean;
  retryAfterMs?: number;
}

export type FirstTurnState =
  | { state: 'running' }
  | { state: 'done'; outcome: ModelTurnOutcome }
  | { state: 'failed'; failure?: Failure }
  | { state: 'none' };

function failureOf(err: unknown): Failure {
  if (err instanceof LlmError)
    return {
      kind: 'llm',
      message: err.message,
      provider: err.provider,
      status: err.status,
      retryable: err.retryable,
      retryAfterMs: err.retryAfterMs,
    };
  if (err instanceof AppError) return { kind: 'app', message: err.message, status: err.status, code: err.code };
  return { kind: 'other', message: (err as Error)?.message ?? String(err) };
}

/**
 * The error the activity throws for the API's failed turn, or null when it runs the turn itself:
 * permanent failures always; a Retry-After only on the activity's first attempt (its retry runs the turn).
 */
function errorOf(f: Failure | undefined, activityAttempt: number): Error | null {
  if (f?.kind === 'app' && (f.status ?? 500) < 500)
    return new AppError(f.code ?? 'VALIDATION_ERROR', f.status ?? 400, f.message);
  if (f?.kind === 'llm' && f.retryable === false)
    return new LlmError(f.provider ?? 'provider', f.message, { status: f.status, retryable: false });
  if (f?.kind === 'llm' && f.retryAfterMs !== undefined && activityAttempt === 1) {
    return new LlmError(f.provider ?? 'provider', f.message, {
      status: f.status,
      retryable: true,
      retryAfterMs: f.retryAfterMs,
    });
  }
  return null;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export function createFirstTurns(d: { redis: Redis; prefix: string; log: Logger }) {
  const key = (jobId: string) => `${d.prefix}turn0:${jobId}`;
  /** The API's turns in flight: aborted (and recorded as failed) when the process stops. */
  const inFlight = new Map<string, { abort: AbortController; settled: Promise<void> }>();

  const state = async (jobId: string): Promise<FirstTurnState> => {
    const v = await d.redis.get(key(jobId));
    if (v === null) return { state: 'none' };
    if (v === 'running') return { state: 'running' };
    try {
      const parsed = JSON.parse(v) as { done?: ModelTurnOutcome; failed?: Failure };
      return parsed.done ? { state: 'done', outcome: parsed.done } : { state: 'failed', failure: parsed.failed };
    } catch {
      return { state: 'failed' };
    }
  };

  /** The turn's state once it is no longer running (or at `until`): polled, backing off from FIRST_POLL_MS to MAX_POLL_MS. */
  const settled = async (jobId: string, opts: { until?: number; signal?: AbortSignal }): Promise<FirstTurnState> => {
    for (let delay = FIRST_POLL_MS; ; delay = Math.min(MAX_POLL_MS, delay * 2)) {
      const s = await state(jobId);
      if (s.state !== 'running' || (opts.until !== undefined && Date.now() + delay > opts.until)) return s;
      await sleep(delay, opts.signal);
    }
  };

  return {
    state,

    /** API: claims the first turn of a new job. False when Redis refuses or the key exists (the job was started before). */
    async claim(jobId: string): Promise<boolean> {
      return (await d.redis.set(key(jobId), 'running', 'PX', FIRST_TURN_LEASE_MS, 'NX')) === 'OK';
    },

    /** API: gives up a claimed turn that will not run (the workflow runs it without waiting for the lease). */
    async release(jobId: string): Promise<void> {
      inFlight.get(jobId)?.abort.abort(new Error('released'));
      await bestEffort(
        d.log,
        'recording a released first turn',
        d.redis.set(
          key(jobId),
          JSON.stringify({ failed: { kind: 'other', message: 'released' } }),
          'PX',
          OUTCOME_TTL_MS,
        ),
      );
    },

    /**
     * API: runs a claimed turn in the background, renewing the lease while it runs, then records
     * its outcome (or that it failed) for the workflow's activity to read.
     */
    run(jobId: string, turn: (signal: AbortSignal) => Promise<ModelTurnOutcome>): void {
      const abort = new AbortController();
      const renew = setInterval(
        () => void bestEffort(d.log, 'renewing a first turn lease', d.redis.pexpire(key(jobId), FIRST_TURN_LEASE_MS)),
        FIRST_TURN_LEASE_MS / 3,
      );
      // The renewal stops before the outcome is written: a late PEXPIRE must not shorten its TTL.
      const settled = turn(abort.signal)
        .then(
          async (outcome) => {
            clearInterval(renew);
            await d.redis.set(key(jobId), JSON.stringify({ done: outcome }), 'PX', OUTCOME_TTL_MS);
          },
          async (err: unknown) => {
            clearInterval(renew);
            d.log.info(
              { jobId, err: (err as Error)?.message },
              'first turn in the API failed; its run decides what follows',
            );
            await d.redis.set(key(jobId), JSON.stringify({ failed: failureOf(err) }), 'PX', OUTCOME_TTL_MS);
          },
        )
        .catch((err: unknown) => {
          // Redis refused the record: the key lapses with its lease and the workflow runs the turn.
          clearInterval(renew);
          d.log.warn({ jobId, err: (err as Error)?.message }, 'could not record the first turn');
        })
        .finally(() => inFlight.delete(jobId));
      inFlight.set(jobId, { abort, settled });
    },

    /**
     * Worker: the outcome of the API's turn, waiting while it runs (heartbeats go on meanwhile);
     * throws what a permanent failure (or a Retry-After) calls for; null when the activity must run
     * the turn itself (never claimed, failed otherwise, or its API is gone).
     */
    async adopt(jobId: string, activityAttempt: number, signal?: AbortSignal): Promise<ModelTurnOutcome | null> {
      const s = await settled(jobId, { signal });
      if (s.state === 'done') return s.outcome;
      const err = s.state === 'failed' ? errorOf(s.failure, activityAttempt) : null;
      if (err) throw err;
      return null;
    },

    /**
     * Workflow task (a local activity): the outcome of the API's turn if it is done within
     * `waitMs`, else null (the `modelTurn` activity then waits, takes over or fails the run).
     */
    async peek(jobId: string, waitMs: number): Promise<ModelTurnOutcome | null> {
      const s = await settled(jobId, { until: Date.now() + waitMs });
      return s.state === 'done' ? s.outcome : null;
    },

    /** API shutdown: aborts the turns in flight and waits (briefly) until each has recorded its failure. */
    async drain(): Promise<void> {
      const all = [...inFlight.values()];
      for (const t of all) t.abort.abort(new Error('the API is stopping'));
      await Promise.race([Promise.allSettled(all.map((t) => t.settled)), sleep(DRAIN_MS)]);
    },

    /** Turns this process is running now (tests, metrics). */
    get running(): number {
      return inFlight.size;
    },
  };
}
export type FirstTurns = ReturnType<typeof createFirstTurns>;
