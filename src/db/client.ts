import { MongoClient, type Collection, type Db, type Document } from 'mongodb';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics.js';

/** Connects with the official driver; the same code path serves MongoDB 7 and FerretDB 1.x. */
export async function connectMongo(uri: string, dbName: string): Promise<{ client: MongoClient; db: Db }> {
  // Command monitoring feeds cortex_mongo_commands_total (one counter increment per round trip).
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000, ignoreUndefined: true, monitorCommands: true });
  client.on('commandStarted', (e) => metrics.mongoCommands.inc({ command: e.commandName }));
  await client.connect();
  return { client, db: client.db(dbName) };
}

/** Declares one index; the key is the query path it serves. */
export interface IndexSpec { collection: string; keys: Record<string, 1 | -1>; unique?: boolean; name: string }

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

export type Coll<T extends Document> = Collection<T>;

/** Escapes user text for use inside a $regex (search filters are substring matches). */
export const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
