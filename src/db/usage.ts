import { createHash } from 'node:crypto';
import type { Db, Document, Filter } from 'mongodb';
import { findById, type IndexSpec } from './client.js';
import { claim, probeFrom } from './claims.js';
import { decodeBlob, type Blob } from './codec.js';

/** What a billed provider call served (the facets usage is reported by). */
export interface UsageAttribution {
  brainId: string | null;
  userId: string | null;
  apiKeyId: string | null;
  jobId: string | null;
  traceId: string | null;
  receptorId: string | null;
  neuronId: string | null;
  pathwayId: string | null;
  /** The share link the call was made through (its token budget sums these rows). */
  shareTokenId?: string | null;
  /**
   * The run a caller started (the job it follows): the job itself, or for a pathway's neuron node
   * or a delegate, the top job. A receptor's or pathway's `invokeCount` counts these.
   */
  runId?: string | null;
}

/**
 * One immutable row per billed provider call (the usage ledger). `_id` is the call's idempotency
 * key (job, call kind, turn and attempt), so a retried write never adds a second row. Cost is an
 * integer in nano-USD so that every sum over rows is exact in any order; it is USD only at the API.
 */
export interface UsageRowDoc extends UsageAttribution {
  _id: string;
  workspaceId: string;
  kind: 'chat' | 'embedding' | 'transcription';
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  totalTokens: number;
  costNanos: number;
  priced: boolean;
  priceVersion: string;
  /** `failed`: the call broke after the provider had started to bill it (tokens streamed); `estimated`: counts estimated, not reported. */
  outcome: 'ok' | 'failed';
  estimated: boolean;
  at: Date;
  /** Transcription rows: the audio sent, which is what speech providers bill (their tokens are 0). */
  audioMs?: number;
  /**
   * The facets this row is the run's first row of (`neuron`: the first of its job for its neuron;
   * `receptor`, `pathway`: the first of its run for them): what `invokeCount` counts, decided once
   * when the row is written (src/db/usage-counters.ts), so an invocation counts once in any sum.
   */
  firstOf?: InvokeFacet[];
}

/** The facets whose `invokeCount` counts runs (neuron: jobs; receptor and pathway: top runs). */
export type InvokeFacet = 'neuron' | 'receptor' | 'pathway';

/**
 * What a rollup groups by: every facet the usage routes report by or filter on. A group is one
 * combination of them, so the caller's filters (user or API key, receptor) combine with every facet.
 */
export interface UsageGroupKey {
  provider: string;
  model: string;
  priced: boolean;
  receptorId: string | null;
  neuronId: string | null;
  pathwayId: string | null;
  shareTokenId: string | null;
  userId: string | null;
  apiKeyId: string | null;
}
/** The sums of one group: tokens, cost, counts, and the invocations that started in it. */
export interface UsageGroupSums {
  tokens: number;
  costNanos: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  rows: number;
  neuronInvokes: number;
  receptorInvokes: number;
  pathwayInvokes: number;
}
export type UsageGroup = UsageGroupKey & UsageGroupSums;
export const GROUP_SUMS: (keyof UsageGroupSums)[] = [
  'tokens',
  'costNanos',
  'inputTokens',
  'outputTokens',
  'cachedInputTokens',
  'rows',
  'neuronInvokes',
  'receptorInvokes',
  'pathwayInvokes',
];

export const groupKeyOf = (r: UsageRowDoc): UsageGroupKey => ({
  provider: r.provider,
  model: r.model,
  priced: r.priced,
  receptorId: r.receptorId ?? null,
  neuronId: r.neuronId ?? null,
  pathwayId: r.pathwayId ?? null,
  shareTokenId: r.shareTokenId ?? null,
  userId: r.userId ?? null,
  apiKeyId: r.apiKeyId ?? null,
});
/** A group's id: its key's facets in a fixed order (the same for a row, a Redis counter and a stored rollup). */
export const groupIdOf = (k: UsageGroupKey): string =>
  createHash('sha1')
    .update(
      JSON.stringify([
        k.provider,
        k.model,
        k.priced,
        k.receptorId,
        k.neuronId,
        k.pathwayId,
        k.shareTokenId,
        k.userId,
        k.apiKeyId,
      ]),
    )
    .digest('hex')
    .slice(0, 16);
/** What one row adds to its group. */
export const rowSums = (r: UsageRowDoc): UsageGroupSums => ({
  tokens: r.totalTokens,
  costNanos: r.costNanos,
  inputTokens: r.inputTokens,
  outputTokens: r.outputTokens,
  cachedInputTokens: r.cachedInputTokens,
  rows: 1,
  neuronInvokes: r.firstOf?.includes('neuron') ? 1 : 0,
  receptorInvokes: r.firstOf?.includes('receptor') ? 1 : 0,
  pathwayInvokes: r.firstOf?.includes('pathway') ? 1 : 0,
});
/** Adds groups into `into` (by group id); returns it. */
export function mergeGroups(into: Map<string, UsageGroup>, groups: Iterable<UsageGroup>): Map<string, UsageGroup> {
  for (const g of groups) {
    const id = groupIdOf(g);
    const cur = into.get(id);
    if (!cur) {
      into.set(id, { ...g });
      continue;
    }
    for (const m of GROUP_SUMS) cur[m] += g[m];
  }
  return into;
}
/** Ledger rows summed by group (the rollup of any set of rows). */
export const groupRows = (rows: Iterable<UsageRowDoc>): Map<string, UsageGroup> => {
  const out = new Map<string, UsageGroup>();
  for (const r of rows) mergeGroups(out, [{ ...groupKeyOf(r), ...rowSums(r) }]);
  return out;
};

/** Epoch hour of a time (hours since 1970-01-01T00Z): the rollups' unit. */
export const HOUR_MS = 3_600_000;
export const hourOf = (t: Date | number): number => Math.floor((typeof t === 'number' ? t : t.getTime()) / HOUR_MS);

/**
 * The rollup of one closed hour of a workspace (`usage_rollups`), computed from the ledger rows of
 * that hour once it is closed (plus a grace period), and claimed by unique `_id` =
 * `<workspace>:<epoch hour>`: written once, never contended (only the reconciler corrects one).
 * An hour without rows has none.
 */
export interface UsageRollupDoc {
  _id: string;
  workspaceId: string;
  hour: Date;
  /**
   * The hour's groups as one JSON string (`UsageGroup[]`): FerretDB decodes a document field by
   * field, and a dozen groups of eighteen fields per hour made a month's read several times slower
   * than one string per hour. Nothing filters inside it.
   */
  groups: Blob;
  rows: number;
  computedAt: Date;
}
export const rollupGroups = (d: Pick<UsageRollupDoc, 'groups'>): UsageGroup[] => decodeBlob<UsageGroup[]>(d.groups, []);

/** Hours in a UTC day (epoch days are epoch hours ÷ 24). */
export const DAY_H = 24;

/**
 * Everything a workspace was billed through one closed UTC day (`usage_cumulative`, `_id` =
 * `<workspace>:c<epoch day>`): the previous day's cumulative rollup plus that day's hour rollups,
 * kept by the reconciler. The whole days of any window are two key reads, through(last day) −
 * through(the day before the first), and a window without a start one; a day's own figures are
 * through(d) − through(d − 1). A chain of them starts at `chainFrom` with a base: the document of the
 * day before, everything billed before `chainFrom` summed from the ledger.
 */
export interface UsageCumulativeDoc {
  _id: string;
  workspaceId: string;
  day: Date;
  chainFrom: number;
  groups: Blob;
  rows: number;
  computedAt: Date;
}
export const cumulativeId = (workspaceId: string, day: number): string => `${workspaceId}:c${day}`;

/** `a − b` by group id (sums subtract; a group left with nothing is dropped). */
export function subtractGroups(a: Iterable<UsageGroup>, b: Iterable<UsageGroup>): UsageGroup[] {
  const out = mergeGroups(new Map(), a);
  for (const g of b) {
    const id = groupIdOf(g);
    const cur = out.get(id) ?? { ...g, ...Object.fromEntries(GROUP_SUMS.map((m) => [m, 0])) };
    for (const m of GROUP_SUMS) cur[m] -= g[m];
    out.set(id, cur);
  }
  return [...out.values()].filter((g) => GROUP_SUMS.some((m) => g[m] !== 0));
}

export const usageIndexes: IndexSpec[] = [
  { collection: 'usage_ledger', keys: { workspaceId: 1, at: 1 }, name: 'ws_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, jobId: 1 }, name: 'ws_job' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, userId: 1, at: 1 }, name: 'ws_user_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, receptorId: 1, at: 1 }, name: 'ws_receptor_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, shareTokenId: 1 }, name: 'ws_share' },
  { collection: 'usage_rollups', keys: { workspaceId: 1, hour: 1 }, name: 'ws_hour' },
  { collection: 'usage_cumulative', keys: { workspaceId: 1, day: 1 }, name: 'ws_day' },
];

/** A group of ledger rows: the sums every usage figure is made of. */
export interface UsageSums {
  tokens: number;
  costNanos: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  rows: number;
}

/** What each sum adds up: a field of the row, or 1 per row. */
const MEASURES = {
  tokens: '$totalTokens',
  costNanos: '$costNanos',
  inputTokens: '$inputTokens',
  outputTokens: '$outputTokens',
  cachedInputTokens: '$cachedInputTokens',
  rows: 1,
} as const;
/**
 * Where a job's ledger rows are found by key: `_id` = `<jobId>:<n>` for n = 1, 2, … (FerretDB's
 * SQLite backend scans the whole ledger for `{ workspaceId, jobId }`, and the ledger grows with
 * every run). A place is claimed before its row is inserted, so a row always has one; a place
 * whose row was never written (the writer died between the two) names no row and counts nothing.
 */
export interface JobRowPlaceDoc {
  _id: string;
  rowId: string;
}

export type Measure = keyof typeof MEASURES;
const ALL_MEASURES = Object.keys(MEASURES) as Measure[];

export function createUsageRepo(db: Db) {
  const rows = db.collection<UsageRowDoc>('usage_ledger');
  const places = db.collection<JobRowPlaceDoc>('usage_job_rows');
  const rollups = db.collection<UsageRollupDoc>('usage_rollups');
  const cumulative = db.collection<UsageCumulativeDoc>('usage_cumulative');
  /** The row ids a job's places name, in order (probed by key from 1 until a miss). */
  const placedRows = async (jobId: string): Promise<string[]> =>
    (await probeFrom(places, (n) => `${jobId}:${n}`, 1)).map((p) => p.rowId);
  return {
    rows,
    places,
    placedRows,
    rollups,
    cumulative,
    /** The cumulative rollup through epoch day `day` (a key read), or null. */
    cumulativeThrough: (workspaceId: string, day: number): Promise<UsageCumulativeDoc | null> =>
      findById(cumulative, cumulativeId(workspaceId, day), { workspaceId }),
    /** The cumulative rollups of days in [from, to) (epoch days). */
    cumulativeBetween: (workspaceId: string, from: number, to: number): Promise<UsageCumulativeDoc[]> =>
      cumulative
        .find({
          workspaceId,
          day: { $gte: new Date(from * DAY_H * HOUR_MS), $lt: new Date(to * DAY_H * HOUR_MS) },
        })
        .toArray(),
    /** The rows of a workspace written in [from, to) (null: unbounded), with `narrow` (the caller, a receptor) applied by the store. */
    rowsBetween: (
      workspaceId: string,
      from: Date | null,
      to: Date | null,
      narrow: Filter<UsageRowDoc> = {},
    ): Promise<UsageRowDoc[]> =>
      rows
        .find({
          ...narrow,
          workspaceId,
          ...(from || to ? { at: { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) } } : {}),
        })
        .toArray(),
    /** The stored rollups of a workspace's hours in [from, to) (epoch hours; null: unbounded). */
    rollupsBetween: (workspaceId: string, from: number | null, to: number | null): Promise<UsageRollupDoc[]> =>
      rollups
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
        .toArray(),
    /** Inserts the row once (a repeat of the same key is a no-op: returns false), its job's place first. */
    async insert(row: UsageRowDoc, opts: { placed?: boolean } = {}): Promise<boolean> {
      if (row.jobId && opts.placed !== false) {
        for (let i = 0; i < 50; i++) {
          const ids = await placedRows(row.jobId);
          if (ids.includes(row._id) || (await claim(places, { _id: `${row.jobId}:${ids.length + 1}`, rowId: row._id })))
            break;
        }
      }
      return claim(rows, row);
    },
    /**
     * Sums of the matching rows grouped by `field` (null: one group of all rows), computed by the
     * database. One `$group` per measure: FerretDB 1.24 computes only the first accumulator of a
     * `$group` and returns 0 for the others (measured: one `$group` with six sums gave totalCost 0 in test/api/usage.test.ts), so each sum is its
     * own aggregation, which is correct on MongoDB and FerretDB alike. Unasked measures read 0.
     */
    async sums(
      filter: Filter<UsageRowDoc>,
      field: keyof UsageRowDoc | null,
      measures: Measure[] = ALL_MEASURES,
    ): Promise<(UsageSums & { key: string | null })[]> {
      const groups = new Map<string | null, UsageSums & { key: string | null }>();
      await Promise.all(
        measures.map(async (m) => {
          const out = await rows
            .aggregate<{ _id: string | null; v: number }>([
              { $match: filter },
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
      filter: Filter<UsageRowDoc>,
      field: 'receptorId' | 'neuronId' | 'pathwayId',
      per: 'jobId' | 'runId' = 'jobId',
    ): Promise<Map<string, number>> {
      const pipeline: Document[] = [
        { $match: { ...filter, [field]: { $ne: null }, [per]: { $ne: null } } },
        { $group: { _id: { r: `$${field}`, j: `$${per}` } } },
        { $group: { _id: '$_id.r', n: { $sum: 1 } } },
      ];
      const out = await rows.aggregate<{ _id: string; n: number }>(pipeline).toArray();
      return new Map(out.map((o) => [o._id, o.n]));
    },
  };
}
export type UsageRepo = ReturnType<typeof createUsageRepo>;
