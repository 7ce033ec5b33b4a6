import type { Collection, Db, Document, Filter } from 'mongodb';
import { findById, type IndexSpec } from '../kernel/store/client.js';
import { claim, probeFrom } from '../kernel/store/claims.js';
import { decodeBlob, encodeBlob, type Blob } from '../kernel/store/codec.js';
import type { InvokeFacet, UsageGroup, UsageRowDoc, UsageSums } from './groups.js';
import {
  cumulativeId,
  DAY_H,
  HOUR_MS,
  type JobRowPlaceDoc,
  type UsageCumulative,
  type UsageCumulativeDoc,
  type UsageRollup,
  type UsageRollupDoc,
} from './model.js';
import type { LedgerMatch, LedgerQuery, Measure, UsageStore } from './store.js';

const ledgerFilter = ({ workspaceId, from, to, ...match }: LedgerQuery): Filter<UsageRowDoc> => ({
  ...match,
  workspaceId,
  ...(from || to ? { at: { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) } } : {}),
});
const decodeGroups = <T extends { groups: Blob }>({ groups, ...d }: T) => ({
  ...d,
  groups: decodeBlob<UsageGroup[]>(groups, []),
});
/** The collection a resource facet names its resources in, and the field that is its name. */
const NAMED = {
  receptor: { collection: 'receptors', name: 'slug' },
  neuron: { collection: 'neurons', name: 'name' },
  pathway: { collection: 'pathways', name: 'name' },
} as const;

export const usageIndexes: IndexSpec[] = [
  { collection: 'usage_ledger', keys: { workspaceId: 1, at: 1 }, name: 'ws_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, jobId: 1 }, name: 'ws_job' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, userId: 1, at: 1 }, name: 'ws_user_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, receptorId: 1, at: 1 }, name: 'ws_receptor_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, shareTokenId: 1 }, name: 'ws_share' },
  { collection: 'usage_rollups', keys: { workspaceId: 1, hour: 1 }, name: 'ws_hour' },
  { collection: 'usage_cumulative', keys: { workspaceId: 1, day: 1 }, name: 'ws_day' },
];

/** What each sum adds up: a field of the row, or 1 per row. */
const MEASURES = {
  tokens: '$totalTokens',
  costNanos: '$costNanos',
  inputTokens: '$inputTokens',
  outputTokens: '$outputTokens',
  cachedInputTokens: '$cachedInputTokens',
  rows: 1,
} as const satisfies Record<Measure, string | 1>;
const ALL_MEASURES = Object.keys(MEASURES) as Measure[];

/** How many ledger rows one process remembers after storing them (`rowsOfJob`). */
const REMEMBERED_ROWS = 2_000;

/** The collections the usage store's parts share, and the rows this process stored. */
interface UsageCollections {
  db: Db;
  rows: Collection<UsageRowDoc>;
  places: Collection<JobRowPlaceDoc>;
  rollups: Collection<UsageRollupDoc>;
  cumulative: Collection<UsageCumulativeDoc>;
  /**
   * Rows this process stored, by key (REMEMBERED_ROWS): a row is stored once (a claim) and never
   * rewritten, and the run that bills a call reads its job's rows right after (its result's usage).
   */
  storedHere: Map<string, UsageRowDoc>;
}

/** The row ids a job's places name, in order (probed by key from 1 until a miss). */
const placedRows = async ({ places }: UsageCollections, jobId: string): Promise<string[]> =>
  (await probeFrom(places, (n) => `${jobId}:${n}`, 1)).map((p) => p.rowId);

/** Remembers a row this process stored (the oldest one is forgotten past REMEMBERED_ROWS). */
const rememberRow = ({ storedHere }: UsageCollections, row: UsageRowDoc) => {
  if (storedHere.size >= REMEMBERED_ROWS) storedHere.delete(storedHere.keys().next().value!);
  storedHere.set(row._id, row);
};

/** The job's rows of these keys (key reads); keys without a row are left out. */
const rowsOfJob = async (
  { rows, storedHere }: UsageCollections,
  workspaceId: string,
  jobId: string,
  keys: string[],
): Promise<UsageRowDoc[]> =>
  (
    await Promise.all(
      keys.map((id) => {
        const known = storedHere.get(id);
        return known && known.workspaceId === workspaceId && known.jobId === jobId
          ? structuredClone(known)
          : findById(rows, id, { workspaceId, jobId });
      }),
    )
  ).filter((r): r is UsageRowDoc => r !== null);

/** The ledger rows: a row claimed once with its job's place, reads by key, by job and by window, the reconciler's marks. */
function createUsageRows(
  c: UsageCollections,
): Pick<
  UsageStore,
  'placedRows' | 'row' | 'rowsOfJob' | 'jobRows' | 'rowsBetween' | 'setFirstOf' | 'countBefore' | 'insert'
> {
  const { rows, places } = c;
  return {
    /** The row ids a job's places name, in order (probed by key from 1 until a miss). */
    placedRows: (jobId: string): Promise<string[]> => placedRows(c, jobId),
    /** One ledger row of the workspace, or null. */
    row: (workspaceId: string, id: string): Promise<UsageRowDoc | null> => findById(rows, id, { workspaceId }),
    /** The job's rows of these keys (key reads); keys without a row are left out. */
    rowsOfJob: (workspaceId: string, jobId: string, keys: string[]): Promise<UsageRowDoc[]> =>
      rowsOfJob(c, workspaceId, jobId, keys),
    /**
     * The rows of one job: through its places (keys), or by query for a job from before places; with
     * `whole`, every row of the run it started (by `runId`). Only the token and cost fields are read
     * by the query.
     */
    async jobRows(workspaceId: string, jobId: string, whole = false): Promise<UsageRowDoc[]> {
      const placed = whole ? [] : [...new Set(await placedRows(c, jobId))];
      if (placed.length) return rowsOfJob(c, workspaceId, jobId, placed);
      return rows
        .find(whole ? { workspaceId, runId: jobId } : { workspaceId, jobId }, {
          projection: { inputTokens: 1, outputTokens: 1, totalTokens: 1, costNanos: 1 },
        })
        .toArray();
    },
    /** The rows of a workspace written in [from, to) (null: unbounded), with `narrow` (the caller, a receptor) applied by the store. */
    rowsBetween: (
      workspaceId: string,
      from: Date | null,
      to: Date | null,
      narrow: LedgerMatch = {},
    ): Promise<UsageRowDoc[]> => rows.find(ledgerFilter({ ...narrow, workspaceId, from, to })).toArray(),
    /**
     * Records which invocations rows stored without `firstOf` start (the reconciler's decision for
     * rows written before it existed or around the counters; only rows read without one are passed).
     */
    async setFirstOf(workspaceId: string, decided: Map<string, InvokeFacet[]>): Promise<void> {
      // One key update per row (FerretDB's SQLite backend applies a filtered bulk update as a scan).
      const list = [...decided];
      for (let i = 0; i < list.length; i += 50)
        await Promise.all(
          list.slice(i, i + 50).map(([id, firstOf]) => rows.updateOne({ _id: id, workspaceId }, { $set: { firstOf } })),
        );
    },
    /** How many ledger rows of the workspace were written before `to` (the reconciler's completeness check). */
    countBefore: (workspaceId: string, to: Date): Promise<number> =>
      rows.countDocuments({ workspaceId, at: { $lt: to } }),
    /** Inserts the row once (a repeat of the same key is a no-op: returns false), its job's place first. */
    async insert(row: UsageRowDoc, opts: { placed?: boolean } = {}): Promise<boolean> {
      if (row.jobId && opts.placed !== false) {
        for (let i = 0; i < 50; i++) {
          const ids = await placedRows(c, row.jobId);
          if (ids.includes(row._id) || (await claim(places, { _id: `${row.jobId}:${ids.length + 1}`, rowId: row._id })))
            break;
        }
      }
      const fresh = await claim(rows, row);
      if (fresh) rememberRow(c, row);
      return fresh;
    },
  };
}

/** The hour rollups and the cumulative day rollups: stored once, corrected by the reconciler, read by range. */
function createUsageRollups({
  rollups,
  cumulative,
}: UsageCollections): Pick<
  UsageStore,
  | 'cumulativeThrough'
  | 'cumulativeBetween'
  | 'rollupsBetween'
  | 'storeRollup'
  | 'correctRollup'
  | 'storeCumulative'
  | 'correctCumulative'
> {
  return {
    /** The cumulative rollup through epoch day `day` (a key read), or null. */
    cumulativeThrough: async (workspaceId: string, day: number): Promise<UsageCumulative | null> => {
      const c = await findById(cumulative, cumulativeId(workspaceId, day), { workspaceId });
      return c && decodeGroups(c);
    },
    /** The cumulative rollups of days in [from, to) (epoch days). */
    cumulativeBetween: async (workspaceId: string, from: number, to: number): Promise<UsageCumulative[]> =>
      (
        await cumulative
          .find({
            workspaceId,
            day: { $gte: new Date(from * DAY_H * HOUR_MS), $lt: new Date(to * DAY_H * HOUR_MS) },
          })
          .toArray()
      ).map(decodeGroups),
    /** The stored rollups of a workspace's hours in [from, to) (epoch hours; null: unbounded). */
    rollupsBetween: async (workspaceId: string, from: number | null, to: number | null): Promise<UsageRollup[]> =>
      (
        await rollups
          .find({
            workspaceId,
            ...(from !== null || to !== null
              ? {
                  hour: {
                    ...(from !== null ? { $gte: new Date(from * HOUR_MS) } : {}),
                    ...(to !== null ? { $lt: new Date(to * HOUR_MS) } : {}),
                  },
                }
              : {}),
          })
          .toArray()
      ).map(decodeGroups),
    /** Stores an hour's rollup once (claimed by its `_id`); false when it is stored already. */
    storeRollup: (r: UsageRollup): Promise<boolean> => claim(rollups, { ...r, groups: encodeBlob(r.groups) }),
    /** Rewrites a stored hour rollup (the reconciler, one run at a time, is its only writer after the claim). */
    correctRollup: async (r: UsageRollup): Promise<void> => {
      await rollups.replaceOne({ _id: r._id, workspaceId: r.workspaceId }, { ...r, groups: encodeBlob(r.groups) });
    },
    /** Stores a day's cumulative rollup once; false when it is stored already. */
    storeCumulative: (c: UsageCumulative): Promise<boolean> =>
      claim(cumulative, { ...c, groups: encodeBlob(c.groups) }),
    /** Rewrites a stored cumulative rollup (a day before it was corrected). */
    correctCumulative: async (c: UsageCumulative): Promise<void> => {
      await cumulative.replaceOne({ _id: c._id, workspaceId: c.workspaceId }, { ...c, groups: encodeBlob(c.groups) });
    },
  };
}

/** Sums, run counts and resource names, computed by the database over the ledger. */
function createUsageAggregates({ db, rows }: UsageCollections): Pick<UsageStore, 'sums' | 'jobsPer' | 'resourceNames'> {
  return {
    /**
     * Sums of the matching rows grouped by `field` (null: one group of all rows), computed by the
     * database. One `$group` per measure: FerretDB 1.24 computes only the first accumulator of a
     * `$group` and returns 0 for the others (measured: one `$group` with six sums gave totalCost 0 in test/api/usage.test.ts), so each sum is its
     * own aggregation, which is correct on MongoDB and FerretDB alike. Unasked measures read 0.
     */
    async sums(
      q: LedgerQuery,
      field: keyof UsageRowDoc | null,
      measures: Measure[] = ALL_MEASURES,
    ): Promise<(UsageSums & { key: string | null })[]> {
      const groups = new Map<string | null, UsageSums & { key: string | null }>();
      await Promise.all(
        measures.map(async (m) => {
          const out = await rows
            .aggregate<{ _id: string | null; v: number }>([
              { $match: ledgerFilter(q) },
              { $group: { _id: field ? `$${field}` : null, v: { $sum: MEASURES[m] } } },
            ])
            .toArray();
          for (const o of out) {
            const key = o._id ?? null;
            const g = groups.get(key) ?? {
              key,
              tokens: 0,
              costNanos: 0,
              inputTokens: 0,
              outputTokens: 0,
              cachedInputTokens: 0,
              rows: 0,
            };
            g[m] = o.v;
            groups.set(key, g);
          }
        }),
      );
      return [...groups.values()];
    },
    /**
     * Distinct runs per value of `field` (how many runs used the resource), counted by the
     * database: `per` jobId (a neuron's own runs) or runId (the run a receptor or pathway started,
     * whose child jobs are one invocation).
     */
    async jobsPer(
      q: LedgerQuery,
      field: 'receptorId' | 'neuronId' | 'pathwayId',
      per: 'jobId' | 'runId' = 'jobId',
    ): Promise<Map<string, number>> {
      const pipeline: Document[] = [
        { $match: { ...ledgerFilter(q), [field]: { $ne: null }, [per]: { $ne: null } } },
        { $group: { _id: { r: `$${field}`, j: `$${per}` } } },
        { $group: { _id: '$_id.r', n: { $sum: 1 } } },
      ];
      const out = await rows.aggregate<{ _id: string; n: number }>(pipeline).toArray();
      return new Map(out.map((o) => [o._id, o.n]));
    },
    /**
     * The names of a facet's resources (a receptor's slug and target kind, a neuron's or pathway's
     * name) of the workspace, by id; ids without a resource are left out.
     */
    async resourceNames(
      facet: InvokeFacet,
      workspaceId: string,
      ids: string[],
    ): Promise<Map<string, { slug: string; subtype: string }>> {
      const out = new Map<string, { slug: string; subtype: string }>();
      if (ids.length === 0) return out;
      const { collection, name } = NAMED[facet];
      const projection = facet === 'receptor' ? { slug: 1, 'executableTarget.kind': 1 } : { [name]: 1 };
      const found = await db
        .collection<Document & { _id: string }>(collection)
        .find({ workspaceId, _id: { $in: ids } }, { projection })
        .toArray();
      for (const r of found) {
        const subtype = facet === 'receptor' ? ((r.executableTarget?.kind as string | undefined) ?? 'receptor') : facet;
        out.set(String(r._id), { slug: r[name] as string, subtype });
      }
      return out;
    },
  };
}

/**
 * The usage ledger's store on MongoDB (and FerretDB): rows claimed once by key with their job's
 * places, rollups stored once with their groups as one string, sums and counts by aggregation.
 */
export function createUsageRepo(db: Db): UsageStore {
  const c: UsageCollections = {
    db,
    rows: db.collection<UsageRowDoc>('usage_ledger'),
    places: db.collection<JobRowPlaceDoc>('usage_job_rows'),
    rollups: db.collection<UsageRollupDoc>('usage_rollups'),
    cumulative: db.collection<UsageCumulativeDoc>('usage_cumulative'),
    storedHere: new Map<string, UsageRowDoc>(),
  };
  return {
    ...createUsageRows(c), // placedRows, row, rowsOfJob, jobRows, rowsBetween, setFirstOf, countBefore, insert
    ...createUsageRollups(c), // cumulativeThrough, cumulativeBetween, rollupsBetween, storeRollup, correctRollup, …
    ...createUsageAggregates(c), // sums, jobsPer, resourceNames
  };
}
