import type { Collection, Db, Document } from 'mongodb';
import { abandonedError, currentRequest } from '../request-context.js';

/**
 * Where each collection method takes its options argument. Only these methods are bounded: they
 * are every driver call the repositories and services make (a new one must be added here).
 */
const OPTIONS_AT: Record<string, number> = {
  findOne: 1,
  find: 1,
  aggregate: 1,
  countDocuments: 1,
  distinct: 2,
  estimatedDocumentCount: 0,
  insertOne: 1,
  insertMany: 1,
  updateOne: 2,
  updateMany: 2,
  replaceOne: 2,
  deleteOne: 1,
  deleteMany: 1,
  findOneAndUpdate: 2,
  findOneAndReplace: 2,
  findOneAndDelete: 1,
  bulkWrite: 1,
};

/** A store call made for a request never waits past the request's deadline: at least this long is left for it. */
const MIN_CALL_MS = 1;
/** What each store call of a committed request past its grace still gets. */
const COMMITTED_CALL_MS = 1_000;

function bounded<T extends Document>(coll: Collection<T>): Collection<T> {
  return new Proxy(coll, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof prop !== 'string' || typeof value !== 'function' || !Object.hasOwn(OPTIONS_AT, prop)) return value;
      const at = OPTIONS_AT[prop]!;
      return (...args: unknown[]) => {
        const rc = currentRequest();
        if (!rc) return (value as (...a: unknown[]) => unknown).apply(target, args);
        // Work of an abandoned request (answered 503, or its client left) is not started: a write
        // that was refused must not be stored later. A committed request finishes its work.
        if (rc.signal.aborted && !rc.committed) throw abandonedError(rc.signal);
        const left = rc.deadline - Date.now();
        // Past the deadline nothing new starts; a request that has answered has an infinite deadline.
        // A committed request's follow-up calls still get a short bound, never a refusal (its write stands).
        if (left <= 0 && !rc.committed) throw abandonedError(rc.signal);
        if (!Number.isFinite(left)) return (value as (...a: unknown[]) => unknown).apply(target, args);
        const given = (args[at] ?? {}) as Record<string, unknown>;
        const next = [...args];
        while (next.length < at) next.push(undefined);
        // timeoutMS (the driver's client-side operation timeout) bounds server selection, the wait
        // for a pooled connection and the round trip; the signal stops a cursor still being read.
        const bound = rc.committed ? Math.max(left, COMMITTED_CALL_MS) : left;
        next[at] = {
          ...given,
          timeoutMS: Math.max(MIN_CALL_MS, Math.min(bound, (given.timeoutMS as number | undefined) ?? bound)),
          ...(rc.committed ? {} : { signal: rc.signal }),
        };
        return (value as (...a: unknown[]) => unknown).apply(target, next);
      };
    },
  });
}

/**
 * The storage boundary's guard: every collection handed out by this Db bounds the calls made for
 * an HTTP request by that request's deadline and refuses to start work for an abandoned request
 * (src/kernel/request-context.ts). Work outside a request (the worker's activities, start-up, sweeps) is
 * untouched.
 */
export function guardDb(db: Db): Db {
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'collection') {
        return <T extends Document>(name: string, options?: Parameters<Db['collection']>[1]) =>
          bounded(target.collection<T>(name, options));
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
