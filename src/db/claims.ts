import type { Collection, Document, Filter, OptionalUnlessRequiredId } from 'mongodb';

/**
 * The platform's one concurrency mechanism: claims by unique insert (docs/decisions.md).
 *
 * Inserting a document whose unique key exists already fails, atomically, on MongoDB and on
 * FerretDB's SQLite and PostgreSQL backends alike (the backend's unique index decides). So every
 * contended change is claimed by inserting a document that names it: the next sequence number of
 * a trace, the next version of a neuron, the terminal state of a job. Only one writer's insert
 * succeeds; a loser re-reads and tries the next number, or learns it lost. Documents that
 * summarise claims (a trace's counters, a neuron's head) are projections that writers converge
 * after they write, never counters incremented on their own. Filtered updates and `$inc` are
 * not used for contended state: FerretDB 1.x applies them as read-modify-write.
 */

/** A duplicate-key failure: 11000 on insert; FerretDB reports a unique violation raised by an update as code 1. */
export function isDuplicateKey(e: unknown): boolean {
  const err = e as { code?: number; message?: string };
  return err?.code === 11000 || /UNIQUE constraint failed|duplicate key/i.test(String(err?.message ?? ''));
}

/** Inserts `doc` if its unique key is free; false when another writer holds the claim. */
export async function claim<T extends Document>(coll: Collection<T>, doc: OptionalUnlessRequiredId<T>): Promise<boolean> {
  try {
    await coll.insertOne(doc);
    return true;
  } catch (e) {
    if (isDuplicateKey(e)) return false;
    throw e;
  }
}

/** Reads the newest claimed document of a sequence (highest `field`), or null. */
export const newest = <T extends Document>(coll: Collection<T>, filter: Filter<T>, field: keyof T & string) =>
  coll.find(filter).sort({ [field]: -1 } as Record<string, 1 | -1>).limit(1).next();

/**
 * Claims the next number of a sequence: reads the newest claim, builds the next document from it
 * and inserts it; when another writer took that number first, tries again from the new newest.
 * `build` returns null to stop (the change turned out to be applied already).
 */
export async function claimNext<T extends Document>(
  coll: Collection<T>, filter: Filter<T>, field: keyof T & string,
  build: (previous: T | null) => OptionalUnlessRequiredId<T> | null,
  /** After a lost claim: the document when this change was applied meanwhile (an idempotent id), else null. */
  already: () => Promise<T | null> = async () => null, maxTries = 100,
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

/** The value at a dotted path (`ingest.status`) of a document. */
const at = (doc: unknown, path: string): unknown => path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), doc);

/**
 * Sets some fields of a document that other writers change too, and makes the change stick.
 * FerretDB 1.x applies an update as read-modify-write of the whole document, so a concurrent write
 * of *other* fields (an ingest job's state beside an artifact's new version) can put this write's
 * fields back. After the update the document is read by `_id`; while `set` does not show and no
 * newer change owns the fields (`superseded`), the update is applied again. Returns whether the
 * first update modified the document (what `updateOne` would have said).
 */
export async function convergeSet<T extends Document & { _id: string }>(
  coll: Collection<T>, filter: Filter<T> & { _id: string }, set: Record<string, unknown>, superseded: (doc: T) => boolean, tries = 5,
): Promise<boolean> {
  const first = await coll.updateOne(filter, { $set: set } as never);
  if (!first.modifiedCount) return false;
  for (let i = 0; i < tries; i++) {
    const doc = await coll.findOne({ _id: filter._id } as Filter<T>) as T | null;
    if (!doc || superseded(doc) || Object.entries(set).every(([k, v]) => JSON.stringify(at(doc, k)) === JSON.stringify(v))) break;
    await coll.updateOne(filter, { $set: set } as never);
  }
  return true;
}
