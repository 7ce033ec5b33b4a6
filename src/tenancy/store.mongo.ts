import { BSON, type Collection, type Db, type Document, type Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { placesOf } from '../jobs/index.js';
import { CHILDREN, PLATFORM_COLLECTIONS, isHoldCollection } from './inventory.js';
import { workspaceDigest, type DeletionDoc, type RetentionKind, type RetentionSettingsDoc } from './model.js';
import type { Removed, TenancyStore } from './store.js';

type Row = Document & { _id: string };

/** The tenancy area's indexes (created at start-up with every other: src/compose/stores.ts allIndexes). */
export const tenancyIndexes: IndexSpec[] = [
  { collection: 'workspace_deletions', keys: { workspaceDigest: 1 }, name: 'digest' },
];
const empty = (): Removed => ({ rows: {}, blobKeys: [], jobIds: [], traceIds: [], sessionIds: [] });
const HOUR_MS = 3_600_000;
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const blobKeyOf = (d: Document): string | null => (typeof d.blobKey === 'string' ? d.blobKey : null);
/** The storage report's sample (rows per collection whose mean size estimates the bytes) and page of parent ids. */
const USAGE_SAMPLE = 100;
const USAGE_PAGE = 500;

/** What the adapter's groups share: the database and the collections they read and write. */
interface TenancyStoreContext {
  db: Db;
  settings: Collection<RetentionSettingsDoc>;
  deletions: Collection<DeletionDoc>;
  coll: (name: string) => Collection<Row>;
}

/**
 * The tenancy area's MongoDB adapter. It reads and deletes other areas' rows by their stored shape
 * (workspaceId, the parent fields of src/tenancy/inventory.ts): the narrow calls retention and
 * workspace deletion need, kept here instead of in each area's repository.
 */
export function createTenancyStore(db: Db): TenancyStore {
  const ctx: TenancyStoreContext = {
    db,
    settings: db.collection<RetentionSettingsDoc>('retention_settings'),
    deletions: db.collection<DeletionDoc>('workspace_deletions'),
    coll: (name: string) => db.collection<Row>(name),
  };
  return { ...createRetentionRows(ctx), ...createWorkspaceRows(ctx), ...createWorkspaceRecords(ctx) };
}

/** The bytes of the bodies rows name: `size`, or `bytes` where a row has no `size` (transcription chunks). */
async function blobSum({ coll }: TenancyStoreContext, name: string, filter: Filter<Row>): Promise<number> {
  let n = 0;
  for (const [match, field] of [
    [{ size: { $gte: 0 } }, '$size'],
    [{ size: { $exists: false }, bytes: { $gte: 0 } }, '$bytes'],
  ] as const) {
    const [r] = await coll(name)
      .aggregate<{ n: number }>([
        { $match: { $and: [filter, { blobKey: { $type: 'string' } }, match] } },
        { $group: { _id: null, n: { $sum: field } } },
      ])
      .toArray();
    n += Number(r?.n ?? 0);
  }
  return n;
}

/** Deletes rows by id, with their children and blobs noted; returns what went. */
async function removeRows({ coll }: TenancyStoreContext, name: string, rows: Row[], out: Removed): Promise<void> {
  if (!rows.length) return;
  const ids = rows.map((r) => r._id);
  for (const rule of CHILDREN.filter((c) => c.parent === name)) {
    const filter: Filter<Row> = rule.field
      ? { [rule.field]: { $in: ids } }
      : { $or: ids.map((id) => ({ _id: { $regex: `^${escapeRe(id)}:` } })) };
    const kids = await coll(rule.collection).find(filter).toArray();
    for (const k of kids) {
      const b = blobKeyOf(k);
      if (b) out.blobKeys.push(b);
    }
    const n = (await coll(rule.collection).deleteMany(filter)).deletedCount;
    if (n) out.rows[rule.collection] = (out.rows[rule.collection] ?? 0) + n;
  }
  for (const r of rows) {
    const b = blobKeyOf(r);
    if (b) out.blobKeys.push(b);
  }
  const n = (await coll(name).deleteMany({ _id: { $in: ids } })).deletedCount;
  if (n) out.rows[name] = (out.rows[name] ?? 0) + n;
}

/**
 * Usage ledger rows whose hour is stored as a rollup (the usage reconciler's, src/usage/reconciler.ts):
 * only those may go, so every past total still adds up from the rollups. A row of an hour never rolled up stays.
 */
async function rolledUp({ coll }: TenancyStoreContext, ws: string, rows: Row[]): Promise<Row[]> {
  const hourOf = (r: Row) => Math.floor((r.at as Date).getTime() / HOUR_MS);
  const hours = [...new Set(rows.map(hourOf))];
  if (!hours.length) return rows;
  const stored = await coll('usage_rollups')
    .find({ workspaceId: ws, hour: { $in: hours.map((h) => new Date(h * HOUR_MS)) } }, { projection: { hour: 1 } })
    .toArray();
  const ok = new Set(stored.map((r) => Math.floor((r.hour as Date).getTime() / HOUR_MS)));
  return rows.filter((r) => ok.has(hourOf(r)));
}

async function expireTraces(ctx: TenancyStoreContext, ws: string, before: Date, limit: number, out: Removed) {
  const { coll } = ctx;
  const traces = await coll('traces')
    .find({ workspaceId: ws, updatedAt: { $lt: before } })
    .limit(limit)
    .toArray();
  if (!traces.length) return;
  const traceIds = traces.map((t) => String(t.traceId));
  out.traceIds.push(...traceIds);
  const engrams = await coll('engrams')
    .find({ workspaceId: ws, traceId: { $in: [...traceIds, ...traces.map((t) => t._id)] } })
    .toArray();
  await removeRows(ctx, 'engrams', engrams, out);
  await removeRows(ctx, 'traces', traces, out);
}

const RULES: Record<Exclude<RetentionKind, 'traces'>, { collection: string; filter: (before: Date) => Filter<Row> }> = {
  jobs: {
    collection: 'jobs',
    filter: (before) => ({ status: { $in: ['completed', 'failed'] }, finishedAt: { $lt: before } }),
  },
  interventions: {
    collection: 'interventions',
    filter: (before) => ({ status: { $ne: 'pending' }, updatedAt: { $lt: before } }),
  },
  // Webhook deliveries (src/webhooks/service.ts owns them): a finished one past its window.
  webhook_deliveries: {
    collection: 'webhook_deliveries',
    filter: (before) => ({ finishedAt: { $ne: null, $lt: before } }),
  },
  transcripts: {
    collection: 'transcription_sessions',
    filter: (before) => ({ status: { $in: ['ready', 'failed'] }, startedAt: { $lt: before } }),
  },
  usage_rows: { collection: 'usage_ledger', filter: (before) => ({ at: { $lt: before } }) },
};

/** Retention: a workspace's windows, and one bounded batch of expired rows of a kind. */
function createRetentionRows(ctx: TenancyStoreContext): Pick<TenancyStore, 'settings' | 'saveSettings' | 'expire'> {
  const { settings, coll } = ctx;
  return {
    settings: (ws) => settings.findOne({ _id: ws }),
    async saveSettings(ws, windows) {
      const now = new Date();
      await settings.updateOne({ _id: ws }, { $set: { workspaceId: ws, windows, updatedAt: now } }, { upsert: true });
      return (await settings.findOne({ _id: ws }))!;
    },

    async expire(ws, kind, before, limit) {
      const out = empty();
      if (kind === 'traces') {
        await expireTraces(ctx, ws, before, limit, out);
        return out;
      }
      const rule = RULES[kind];
      let rows = await coll(rule.collection)
        .find({ workspaceId: ws, ...rule.filter(before) } as Filter<Row>)
        .limit(limit)
        .toArray();
      if (kind === 'usage_rows') rows = await rolledUp(ctx, ws, rows);
      if (kind === 'jobs') {
        out.jobIds.push(...rows.map((r) => r._id));
        for (const c of ['run_contexts', 'job_claims', 'pathway_trails']) {
          const n = (await coll(c).deleteMany({ workspaceId: ws, _id: { $in: rows.map((r) => r._id) } })).deletedCount;
          if (n) out.rows[c] = n;
        }
      }
      if (kind === 'transcripts') {
        const ids = rows.map((r) => r._id);
        out.sessionIds.push(...ids);
        const chunks = await coll('transcription_chunks')
          .find({ workspaceId: ws, sessionId: { $in: ids } })
          .toArray();
        await removeRows(ctx, 'transcription_chunks', chunks, out);
      }
      await removeRows(ctx, rule.collection, rows, out);
      return out;
    },
  };
}

/** A workspace's rows in every collection: listed, counted (the storage report), erased in batches, read for the archive. */
function createWorkspaceRows(
  ctx: TenancyStoreContext,
): Pick<TenancyStore, 'collections' | 'usage' | 'ownedIds' | 'eraseBatch' | 'rowsOf'> {
  const { db, coll } = ctx;
  return {
    async collections() {
      const all = await db.listCollections({}, { nameOnly: true }).toArray();
      return all
        .map((c) => c.name)
        .filter((n) => !n.startsWith('system.') && !PLATFORM_COLLECTIONS.has(n))
        .sort();
    },

    /**
     * Counted and summed in the store, never read whole: rows by countDocuments, blob bytes by a
     * $group, store bytes estimated from a sample of USAGE_SAMPLE rows per collection (their mean
     * BSON size times the count). Children rows are counted through their parents' ids, a page at a time.
     */
    async usage(ws) {
      const collections: Record<string, { rows: number; bytes: number }> = {};
      let blobBytes = 0;
      const childNames = new Set(CHILDREN.map((c) => c.collection));
      const tally = async (name: string, filter: Filter<Row>) => {
        const rows = await coll(name).countDocuments(filter);
        if (!rows) return;
        const sample = await coll(name).find(filter).limit(USAGE_SAMPLE).toArray();
        const mean = sample.reduce((a, d) => a + BSON.calculateObjectSize(d), 0) / Math.max(1, sample.length);
        const c = (collections[name] ??= { rows: 0, bytes: 0 });
        c.rows += rows;
        c.bytes += Math.round(mean * rows);
        blobBytes += await blobSum(ctx, name, filter);
      };
      for (const name of await this.collections()) {
        if (isHoldCollection(name) || childNames.has(name)) continue;
        await tally(name, name === 'workspaces' ? { _id: ws } : { workspaceId: ws });
        for (const rule of CHILDREN.filter((c) => c.parent === name)) {
          for (let after: string | null = null; ;) {
            const ids = await this.ownedIds(name, ws, after, USAGE_PAGE);
            if (!ids.length) break;
            after = ids[ids.length - 1];
            await tally(
              rule.collection,
              rule.field
                ? { [rule.field]: { $in: ids } }
                : { $or: ids.map((id) => ({ _id: { $regex: `^${escapeRe(id)}:` } })) },
            );
          }
        }
      }
      return { collections, blobBytes };
    },

    async ownedIds(collection, ws, after, limit) {
      const rows = await coll(collection)
        .find(after ? { workspaceId: ws, _id: { $gt: after } } : { workspaceId: ws }, { projection: { _id: 1 } })
        .sort({ _id: 1 })
        .limit(limit)
        .toArray();
      return rows.map((r) => r._id);
    },

    async eraseBatch(ws, limit) {
      const out = empty();
      for (const name of await this.collections()) {
        if (name === 'workspaces') continue;
        if (isHoldCollection(name)) {
          const n = (await coll(name).deleteMany({ _id: { $regex: escapeRe(ws) } })).deletedCount;
          if (n) out.rows[name] = n;
          continue;
        }
        const rows = await coll(name).find({ workspaceId: ws }).limit(limit).toArray();
        if (name === 'jobs') out.jobIds.push(...rows.map((r) => r._id));
        await removeRows(ctx, name, rows, out);
        if (Object.keys(out.rows).length && rows.length >= limit) return out;
      }
      return out;
    },

    async *rowsOf(ws) {
      const childNames = new Set(CHILDREN.map((c) => c.collection));
      for (const name of await this.collections()) {
        // Children come with their parent (some carry workspaceId too: once only).
        if (isHoldCollection(name) || childNames.has(name)) continue;
        const filter: Filter<Row> = name === 'workspaces' ? { _id: ws } : { workspaceId: ws };
        const children = CHILDREN.filter((c) => c.parent === name);
        for await (const doc of coll(name).find(filter).sort({ _id: 1 })) {
          yield { collection: name, doc };
          for (const rule of children) {
            const f: Filter<Row> = rule.field
              ? { [rule.field]: doc._id }
              : { _id: { $regex: `^${escapeRe(doc._id)}:` } };
            for await (const kid of coll(rule.collection).find(f)) yield { collection: rule.collection, doc: kid };
          }
        }
      }
    },
  };
}

/** Single records: archive rows inserted, a workspace's credentials and existence, the deletion records. */
function createWorkspaceRecords(
  ctx: TenancyStoreContext,
): Pick<
  TenancyStore,
  | 'insertRows'
  | 'apiKeys'
  | 'shareTokens'
  | 'deleteIds'
  | 'workspaceExists'
  | 'isDeleted'
  | 'forgetDeleted'
  | 'deletions'
> {
  const { deletions, coll } = ctx;
  return {
    async insertRows(collection, docs) {
      // Rows of an archive made before data format 2 are brought up to it (src/releases/migrations.ts).
      if (docs.length)
        await coll(collection).insertMany(docs.map((doc) => placesOf(collection, doc)) as Row[], { ordered: false });
    },
    async apiKeys(ws) {
      const rows = await coll('api_keys')
        .find({ workspaceId: ws }, { projection: { hash: 1 } })
        .toArray();
      return rows.map((r) => ({ id: r._id, hash: String(r.hash) }));
    },
    async shareTokens(ws) {
      const rows = await coll('share_tokens')
        .find({ workspaceId: ws }, { projection: { tokenHash: 1 } })
        .toArray();
      return rows.map((r) => ({ id: r._id, hash: String(r.tokenHash) }));
    },
    async deleteIds(collection, ids) {
      await coll(collection).deleteMany({ _id: { $in: ids } });
    },
    workspaceExists: async (ws) => (await coll('workspaces').countDocuments({ _id: ws }, { limit: 1 })) > 0,

    isDeleted: async (ws) =>
      (await deletions.countDocuments({ workspaceDigest: workspaceDigest(ws) }, { limit: 1 })) > 0,
    async forgetDeleted(ws) {
      await deletions.updateMany({ workspaceDigest: workspaceDigest(ws) }, { $set: { workspaceDigest: 'imported' } });
    },
    deletions: {
      create: async (doc) => {
        await deletions.insertOne(doc);
      },
      get: (id) => deletions.findOne({ _id: id }),
      async update(id, set, add) {
        const inc = Object.fromEntries(Object.entries(add ?? {}).map(([k, v]) => [`deleted.${k}`, v]));
        await deletions.updateOne(
          { _id: id },
          { $set: { ...set, updatedAt: new Date() }, ...(Object.keys(inc).length ? { $inc: inc } : {}) },
        );
      },
    },
  };
}
