import type { Collection, Document, Filter, OptionalUnlessRequiredId } from 'mongodb';
import { randomUUID } from 'node:crypto';
import { AppError } from '../errors.js';

/**
 * The platform's one concurrency mechanism: claims by unique insert (docs/decisions.md).
 *
 * Inserting a document whose unique key exists already fails, atomically, on MongoDB and on
 * FerretDB's SQLite and PostgreSQL backends alike (the backend's unique index decides). So every
 * contended change is claimed by inserting a document that names it: the next sequence number of
 * a trace, the next version of a neuron, the terminal state of a job. Only one writer's insert
 * succeeds; a loser re-reads and tries the next number, or learns it lost. Documents that
 * summarise claims (a trace's counters, a neuron's head) are projections that writers converge
 * after they write, never counters incremented on their own. A filtered update of one document
 * (a compare-and-set: the trace head, a queued run's lease, an outbox hold) is atomic on MongoDB
 * and on the FerretDB this project builds (patch level cortex.5; upstream FerretDB 1.x applied it
 * as read-modify-write, and two writers could both win: docs/store.md). Where several writers must
 * change fields of one document, each update is made under a hold (`holding`).
 */

/** A duplicate-key failure: 11000 on insert; FerretDB reports a unique violation raised by an update as code 1. */
export function isDuplicateKey(e: unknown): boolean {
  const err = e as { code?: number; message?: string };
  return err?.code === 11000 || /UNIQUE constraint failed|duplicate key/i.test(String(err?.message ?? ''));
}

/** Inserts `doc` if its unique key is free; false when another writer holds the claim. */
export async function claim<T extends Document>(
  coll: Collection<T>,
  doc: OptionalUnlessRequiredId<T>,
): Promise<boolean> {
  try {
    await coll.insertOne(doc);
    return true;
  } catch (e) {
    if (isDuplicateKey(e)) return false;
    throw e;
  }
}

/**
 * The documents of a keyed sequence from position `from` on, in order: `key(from)`, `key(from + 1)`,
 * … read by `_id` until the first miss. Places (an engram's position in its trace, a job's ledger
 * rows) are claimed in order without gaps, so the run ends at the newest.
 */
export async function probeFrom<T extends Document & { _id: string }>(
  coll: Collection<T>,
  key: (n: number) => string,
  from: number,
): Promise<T[]> {
  const out: T[] = [];
  for (let n = from; ; n++) {
    const doc = (await coll.findOne({ _id: key(n) } as Filter<T>)) as T | null;
    if (!doc) return out;
    out.push(doc);
  }
}

/** Reads the newest claimed document of a sequence (highest `field`), or null. */
export const newest = <T extends Document>(coll: Collection<T>, filter: Filter<T>, field: keyof T & string) =>
  coll
    .find(filter)
    .sort({ [field]: -1 } as Record<string, 1 | -1>)
    .limit(1)
    .next();

/**
 * Claims the next number of a sequence: reads the newest claim, builds the next document from it
 * and inserts it; when another writer took that number first, tries again from the new newest.
 * `build` returns null to stop (the change turned out to be applied already).
 */
export async function claimNext<T extends Document>(
  coll: Collection<T>,
  filter: Filter<T>,
  field: keyof T & string,
  build: (previous: T | null) => OptionalUnlessRequiredId<T> | null,
  /** After a lost claim: the document when this change was applied meanwhile (an idempotent id), else null. */
  already: () => Promise<T | null> = async () => null,
  maxTries = 100,
): Promise<T | null> {
  for (let i = 0; i < maxTries; i++) {
    const prev = await newest(coll, filter, field);
    const doc = build(prev as T | null);
    if (!doc) return null;
    if (await claim(coll, doc)) return doc as unknown as T;
    const done = await already();
    if (done) return done;
  }
  throw new Error(`could not claim the next ${field} after ${maxTries} tries`);
}

/**
 * A short exclusive hold on one key, claimed by unique insert: `{ _id: key, owner, expiresAt }`.
 * The platform's lease: used where several writers change fields of one document (FerretDB 1.x
 * applies every update as read-modify-write of the whole document, so two concurrent updates of
 * different fields can lose one) and where a step must run once at a time (a pathway save, a token
 * refresh). A hold left by a process that died is taken over once its lease has run out.
 */
export interface HoldDoc {
  _id: string;
  owner: string;
  expiresAt: Date;
}

/** Takes the hold `key` for `owner`; false while another live holder has it (an expired hold is removed first). */
export async function tryHold(
  coll: Collection<HoldDoc>,
  key: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  if (await claim(coll, { _id: key, owner, expiresAt: new Date(Date.now() + leaseMs) })) return true;
  const held = await coll.findOne({ _id: key });
  if (
    held &&
    held.expiresAt.getTime() < Date.now() &&
    (await coll.deleteOne({ _id: key, owner: held.owner })).deletedCount === 1
  ) {
    return claim(coll, { _id: key, owner, expiresAt: new Date(Date.now() + leaseMs) });
  }
  return false;
}

/**
 * Extends a hold its owner still has, for a holder that keeps it for long (the search syncer,
 * src/search/indexer.ts): false when the hold is no longer the owner's (it lapsed and was
 * taken over). Only the owner writes its hold while it is live (a takeover needs it expired), so
 * this filtered update is not contended.
 */
export async function renewHold(
  coll: Collection<HoldDoc>,
  key: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const r = await coll.updateOne({ _id: key, owner }, { $set: { expiresAt: new Date(Date.now() + leaseMs) } });
  return r.matchedCount === 1;
}

/** Gives the hold back (only the owner's: a hold taken over after its lease stays with the new owner). */
export async function releaseHold(coll: Collection<HoldDoc>, key: string, owner: string): Promise<void> {
  await coll.deleteOne({ _id: key, owner });
}

/**
 * Runs `fn` holding `key`, waiting (with jittered backoff up to 100 ms) while another writer holds it;
 * after `waitMs` throws `busy()`. Holders keep the hold for one short write, so waits are brief.
 */
export async function holding<T>(
  coll: Collection<HoldDoc>,
  key: string,
  fn: () => Promise<T>,
  o: { leaseMs: number; waitMs: number; busy: () => Error },
): Promise<T> {
  const owner = randomUUID();
  const deadline = Date.now() + o.waitMs;
  for (let wait = 2; !(await tryHold(coll, key, owner, o.leaseMs)); wait = Math.min(wait * 2, 100)) {
    if (Date.now() > deadline) throw o.busy();
    await new Promise((r) => setTimeout(r, wait + Math.floor(Math.random() * wait)));
  }
  try {
    return await fn();
  } finally {
    // Silent on purpose: no logger reaches this store helper, and a hold not given back ends with its lease (o.leaseMs).
    await releaseHold(coll, key, owner).catch(() => undefined);
  }
}

/** A row's write hold is given back after one update; a holder that died blocks others at most this long. */
const ROW_HOLD_LEASE_MS = 10_000;
const ROW_HOLD_WAIT_MS = 15_000;

/**
 * Updates one document while holding it (`holds` keyed by the document's `_id`): for documents with
 * several writers of different fields. FerretDB 1.x applies each update as read-modify-write of the
 * whole document, so without the hold one writer can put back fields another has just changed (a CI
 * run read an artifact's latest_version 3 after a patch had answered 4). The filter is checked under
 * the hold, so a version guard (`version: { $lt: n }`) holds too. Every writer of such a collection
 * must come through here. Returns whether the document changed.
 */
export const updateHeld = <T extends Document & { _id: string }>(
  holds: Collection<HoldDoc>,
  coll: Collection<T>,
  filter: Filter<T> & { _id: string },
  set: Record<string, unknown>,
): Promise<boolean> =>
  holding(holds, filter._id, () => coll.updateOne(filter, { $set: set } as never), {
    leaseMs: ROW_HOLD_LEASE_MS,
    waitMs: ROW_HOLD_WAIT_MS,
    busy: () =>
      new AppError('SERVICE_UNAVAILABLE', 503, 'The resource is being changed by other requests; retry', {
        'Retry-After': '1',
      }),
  }).then((r) => r.modifiedCount > 0);
