import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { unavailable } from './errors.js';
import { uuidFromName } from './ids.js';

/**
 * What the platform knows about the HTTP request a piece of work is done for, carried through
 * every await by AsyncLocalStorage so that the storage boundary (src/kernel/store/guard.ts) can bound and
 * abandon the work without each service passing it along:
 * - `deadline`: epoch ms after which the request has been answered (503) and its work is abandoned;
 * - `signal`: aborted when the deadline passes, a dependency the request needs fails, or the client
 *   leaves; store calls not yet started then fail instead of running;
 * - `idempotency`: the request's Idempotency-Key, scoped to its workspace and route, from which the
 *   ids of what it creates are derived (`newId`), so a retry with the same key writes the same ids.
 */
export interface RequestContext {
  deadline: number;
  signal: AbortSignal;
  idempotency?: string;
  /**
   * Set by `markCommitted` once the request's write is stored: from then on the request answers
   * its success, late if need be, rather than a 503 that would claim nothing was stored; its
   * remaining store calls get COMMIT_GRACE_MS more and are no longer refused.
   */
  committed?: boolean;
}

/** Time given to a committed request's remaining work (its follow-up writes and notifications). */
const COMMIT_GRACE_MS = 5_000;

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` as work of the request `rc`. */
export const runInRequest = <T>(rc: RequestContext, fn: () => Promise<T>): Promise<T> => storage.run(rc, fn);

/** Runs `fn` outside any request: background work started by a request that must outlive it. */
export const runDetached = <T>(fn: () => T): T => storage.exit(fn);

/** The request the current work is done for, if any. */
export const currentRequest = (): RequestContext | undefined => storage.getStore();

/**
 * The current request's write is stored: it will not be answered 503 any more (see
 * `RequestContext.committed`). Called by services at their commit point (the insert that makes the
 * resource exist); a no-op outside a request.
 */
export function markCommitted(): void {
  const rc = storage.getStore();
  if (!rc || rc.committed) return;
  rc.committed = true;
  rc.deadline = Math.max(rc.deadline, Date.now() + COMMIT_GRACE_MS);
}

/** The error a request's abandoned work fails with (the reason given to `abort`, else a plain 503). */
export function abandonedError(signal: AbortSignal): Error {
  return signal.reason instanceof Error
    ? signal.reason
    : unavailable('The request was abandoned before it finished; retry', 1);
}

/**
 * A fresh id for something the current request creates: derived from the request's Idempotency-Key
 * and `purpose` when it has one (a retry with the same key gets the same id, so its insert finds the
 * first attempt's document instead of writing a second), else random.
 */
export function newId(purpose: string): string {
  const key = storage.getStore()?.idempotency;
  return key ? uuidFromName(`idempotency:${key}:${purpose}`) : randomUUID();
}

/**
 * The id derived from the current request's Idempotency-Key for `purpose`, or undefined when the
 * request has none: for services whose create is already idempotent by id (an insert of a known
 * id finds the earlier one), so only a keyed request pays for that check.
 */
export function idempotentId(purpose: string): string | undefined {
  return storage.getStore()?.idempotency ? newId(purpose) : undefined;
}
