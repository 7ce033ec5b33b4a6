import {
  MongoClient,
  type Collection,
  type Db,
  type Document,
  type Filter,
  type FindOptions,
  type WithId,
} from 'mongodb';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';

/**
 * Which store the repositories talk to. Each repository keeps its operations correct on both; where
 * FerretDB 1.x needs a workaround to be fast (key places, holds), the repository uses it on
 * `ferretdb` and the plain form on `mongodb` (docs/architecture.md, "Storage boundary").
 */
export type StoreBackend = 'ferretdb' | 'mongodb';

/**
 * The store's reachability ping, on a connection of its own (made at the first ping, so a process
 * that never probes opens none). On the shared pool a ping waits for a free connection behind every
 * command in flight: a burst of one workspace's writes that fills the pool made the store look
 * unreachable, and its breaker refused every workspace. A ping on its own connection asks the store
 * itself; the requests waiting for the pool are bounded by their own deadlines.
 */
export function createStorePing(uri: string, dbName: string, timeoutMs: number) {
  let client: MongoClient | undefined;
  return {
    ping: () =>
      (client ??= new MongoClient(uri, { maxPoolSize: 1, serverSelectionTimeoutMS: timeoutMs }))
        .db(dbName)
        .command({ ping: 1 }, { timeoutMS: timeoutMs }),
    close: async (): Promise<void> => {
      await client?.close();
    },
  };
}

/**
 * The collection a command names (`{ find: 'jobs' }`, `{ getMore: id, collection: 'jobs' }`), '' for
 * one that names none (`ping`, `hello`). Collection names are the platform's own, never a tenant's.
 */
function collectionOf(command: Document, name: string): string {
  const named: unknown = name === 'getMore' ? command.collection : command[name];
  return typeof named === 'string' ? named : '';
}

/** Connects with the official driver; the same code path serves MongoDB 7 and FerretDB 1.x. */
export async function connectMongo(uri: string, dbName: string): Promise<{ client: MongoClient; db: Db }> {
  // Command monitoring feeds cortex_mongo_commands_total (one counter increment per round trip).
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 5_000,
    ignoreUndefined: true,
    monitorCommands: true,
  });
  client.on('commandStarted', (e) =>
    metrics.mongoCommands.inc({ command: e.commandName, collection: collectionOf(e.command, e.commandName) }),
  );
  await client.connect();
  return { client, db: client.db(dbName) };
}

/** Declares one index; the key is the query path it serves. */
export interface IndexSpec {
  collection: string;
  keys: Record<string, 1 | -1>;
  unique?: boolean;
  name: string;
}

/**
 * Creates every index idempotently (createIndex is a no-op when the same index exists).
 * Each family registers its own specs next to its repository.
 */
export async function ensureIndexes(db: Db, specs: IndexSpec[], log?: Logger): Promise<void> {
  for (const s of specs) {
    await db.collection(s.collection).createIndex(s.keys, { name: s.name, unique: s.unique ?? false });
  }
  log?.debug({ count: specs.length }, 'indexes ensured');
}

/** Escapes user text for use inside a $regex (search filters are substring matches). */
export const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * One document by `_id` and the other conditions in `where` (the workspace, most often), all in
 * the query's filter. The patched FerretDB (scripts/ferretdb-sqlite-indexes.patch) serves any filter
 * holding an `_id` equality by key, as MongoDB does from its `_id` index.
 */
export async function findById<T extends Document>(
  coll: Collection<T>,
  id: string,
  where: Partial<Record<keyof T & string, unknown>> = {},
  options?: FindOptions,
): Promise<WithId<T> | null> {
  return (await coll.findOne({ ...where, _id: id } as Filter<T>, options)) as WithId<T> | null;
}

/** Up to this many ids are read by key one by one (in parallel); more in one `$in` query. */
const FEW_IDS = 8;

/**
 * Documents by `_id`, in bulk (the search index's batched re-reads): a few ids each by key, more
 * in one `$in` query. FerretDB's SQLite backend serves a filter of `_id` alone by key but scans
 * the collection for `$in`, so one scan is cheaper than many lookups only for a batch; MongoDB
 * answers both from the `_id` index. Missing ids are left out; the caller checks other conditions.
 */
export async function findByIds<T extends Document>(
  coll: Collection<T>,
  ids: string[],
  options?: FindOptions,
): Promise<WithId<T>[]> {
  const unique = [...new Set(ids)];
  if (unique.length <= FEW_IDS) {
    const docs: (WithId<T> | null)[] = await Promise.all(
      unique.map((id) => coll.findOne({ _id: id } as Filter<T>, options) as Promise<WithId<T> | null>),
    );
    return docs.filter((x): x is WithId<T> => x !== null);
  }
  return (await coll.find({ _id: { $in: unique } } as Filter<T>, options).toArray()) as WithId<T>[];
}
