import type { Db, Document, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import { claim, probeFrom } from './claims.js';

/** What a billed provider call served (the facets usage is reported by). */
export interface UsageAttribution {
  brainId: string | null; userId: string | null; apiKeyId: string | null; jobId: string | null; traceId: string | null;
  receptorId: string | null; neuronId: string | null; pathwayId: string | null;
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
  _id: string; workspaceId: string; kind: 'chat' | 'embedding' | 'transcription';
  provider: string; model: string; inputTokens: number; outputTokens: number; cachedInputTokens: number; totalTokens: number;
  costNanos: number; priced: boolean; priceVersion: string;
  /** `failed`: the call broke after the provider had started to bill it (tokens streamed); `estimated`: counts estimated, not reported. */
  outcome: 'ok' | 'failed'; estimated: boolean; at: Date;
  /** Transcription rows: the audio sent, which is what speech providers bill (their tokens are 0). */
  audioMs?: number;
}

export const usageIndexes: IndexSpec[] = [
  { collection: 'usage_ledger', keys: { workspaceId: 1, at: 1 }, name: 'ws_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, jobId: 1 }, name: 'ws_job' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, userId: 1, at: 1 }, name: 'ws_user_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, receptorId: 1, at: 1 }, name: 'ws_receptor_at' },
  { collection: 'usage_ledger', keys: { workspaceId: 1, shareTokenId: 1 }, name: 'ws_share' },
];

/** A group of ledger rows: the sums every usage figure is made of. */
export interface UsageSums { tokens: number; costNanos: number; inputTokens: number; outputTokens: number; cachedInputTokens: number; rows: number }

/** What each sum adds up: a field of the row, or 1 per row. */
const MEASURES = {
  tokens: '$totalTokens', costNanos: '$costNanos', inputTokens: '$inputTokens', outputTokens: '$outputTokens', cachedInputTokens: '$cachedInputTokens', rows: 1,
} as const;
/**
 * Where a job's ledger rows are found by key: `_id` = `<jobId>:<n>` for n = 1, 2, … (FerretDB's
 * SQLite backend scans the whole ledger for `{ workspaceId, jobId }`, and the ledger grows with
 * every run). A place is claimed before its row is inserted, so a row always has one; a place
 * whose row was never written (the writer died between the two) names no row and counts nothing.
 */
export interface JobRowPlaceDoc { _id: string; rowId: string }

export type Measure = keyof typeof MEASURES;
const ALL_MEASURES = Object.keys(MEASURES) as Measure[];

export function createUsageRepo(db: Db) {
  const rows = db.collection<UsageRowDoc>('usage_ledger');
  const places = db.collection<JobRowPlaceDoc>('usage_job_rows');
  /** The row ids a job's places name, in order (probed by key from 1 until a miss). */
  const placedRows = async (jobId: string): Promise<string[]> => (await probeFrom(places, (n) => `${jobId}:${n}`, 1)).map((p) => p.rowId);
  return {
    rows, places, placedRows,
    /** Inserts the row once (a repeat of the same key is a no-op: returns false), its job's place first. */
    async insert(row: UsageRowDoc, opts: { placed?: boolean } = {}): Promise<boolean> {
      if (row.jobId && opts.placed !== false) {
        for (let i = 0; i < 50; i++) {
          const ids = await placedRows(row.jobId);
          if (ids.includes(row._id) || (await claim(places, { _id: `${row.jobId}:${ids.length + 1}`, rowId: row._id }))) break;
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
    async sums(filter: Filter<UsageRowDoc>, field: keyof UsageRowDoc | null, measures: Measure[] = ALL_MEASURES): Promise<(UsageSums & { key: string | null })[]> {
      const groups = new Map<string | null, UsageSums & { key: string | null }>();
      await Promise.all(measures.map(async (m) => {
        const out = await rows.aggregate<{ _id: string | null; v: number }>([
          { $match: filter },
          { $group: { _id: field ? `$${field}` : null, v: { $sum: MEASURES[m] } } },
        ]).toArray();
        for (const o of out) {
          const key = o._id ?? null;
          const g = groups.get(key) ?? { key, tokens: 0, costNanos: 0, inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, rows: 0 };
          g[m] = o.v;
          groups.set(key, g);
        }
      }));
      return [...groups.values()];
    },
    /**
     * Distinct runs per value of `field` (how many runs used the resource), counted by the
     * database: `per` jobId (a neuron's own runs) or runId (the run a receptor or pathway started,
     * whose child jobs are one invocation).
     */
    async jobsPer(filter: Filter<UsageRowDoc>, field: 'receptorId' | 'neuronId' | 'pathwayId', per: 'jobId' | 'runId' = 'jobId'): Promise<Map<string, number>> {
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
