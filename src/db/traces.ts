import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import { findById } from './client.js';
import { page, pageIndexes, type PageQuery, type PageScan, type PageSort } from './paging.js';
import { uuidFromName } from '../ids.js';

export interface CostSummary {
  totalCostUsd: number;
  totalTokens: number;
  inputTokens: number;
  outputTokens: number;
}
export const emptyCost = (): CostSummary => ({ totalCostUsd: 0, totalTokens: 0, inputTokens: 0, outputTokens: 0 });

export interface TraceDoc {
  _id: string;
  traceId: string;
  workspaceId: string;
  brainId: string | null;
  userId: string | null;
  apiKeyId: string | null;
  receptorId: string | null;
  neuronId: string | null;
  title: string | null;
  titleSource: 'manual' | 'generated' | null;
  traceType: 'thread' | 'system';
  messageCount: number;
  cost: CostSummary;
  memoryIds: string[];
  metadata: Blob;
  createdAt: Date;
  updatedAt: Date;
}

export interface EngramDoc {
  _id: string;
  workspaceId: string;
  traceId: string;
  seq: number;
  content: { type: string; content: string };
  contentHash: string;
  metadata: Blob;
  sourceType: string;
  sourceId: string | null;
  targetType: string | null;
  targetId: string | null;
  traceType: 'thread' | 'system';
  memoryIds: string[];
  jobId: string | null;
  createdAt: Date;
  /** The trace's running totals up to and including this engram (its message count is `seq`). */
  totals?: CostSummary;
}

/**
 * Where an engram sits in its trace, found by key: `_id` is `<traceKey>:<seq>`. FerretDB's SQLite
 * backend scans the whole engram collection for "the newest engram of this trace" (any filter but
 * `_id` alone), so the append and the history read walk these keys from the trace's message count
 * instead. A place is derived from its engram (the engram's unique (workspace, trace, seq) index
 * stays the claim): written right after the engram, and written again by whoever finds it missing.
 */
export interface EngramPlaceDoc {
  _id: string;
  engramId: string;
  seq: number;
  totals: CostSummary;
}
export const placeKey = (traceDocId: string, seq: number): string => `${traceDocId}:${seq}`;

export const traceIndexes: IndexSpec[] = [
  { collection: 'traces', keys: { workspaceId: 1, traceId: 1 }, unique: true, name: 'ws_trace_unique' },
  // GET /v1/traces pages by (sort field, _id) (src/db/paging.ts): each sort under the workspace with
  // and without the trace type, and the default sort under each single equality filter.
  ...pageIndexes('traces', ['workspaceId', 'traceType'], ['createdAt', 'updatedAt', 'messageCount']),
  ...pageIndexes('traces', ['workspaceId'], ['createdAt', 'updatedAt', 'messageCount']),
  ...(['brainId', 'receptorId', 'userId'] as const).flatMap((f) =>
    pageIndexes('traces', ['workspaceId', f, 'traceType'], ['updatedAt']),
  ),
  ...pageIndexes('traces', ['workspaceId', 'brainId', 'neuronId', 'traceType'], ['updatedAt']),
  // The claim of an engram's place in its trace (src/db/claims.ts): one engram per (trace, seq).
  { collection: 'engrams', keys: { workspaceId: 1, traceId: 1, seq: 1 }, unique: true, name: 'ws_trace_seq_unique' },
];

/**
 * The `_id` of the trace document of (workspace, trace id): a name-based UUID (SHA-1, version 5
 * layout), so a trace is found by key. FerretDB's SQLite backend, the default embedded store, scans
 * the whole collection for any filter but `_id` alone, and every run reads its trace several times.
 * Traces created before this have random ids and are found by the (workspace, trace) index, as
 * before (a key miss falls back to it).
 */
export const traceKey = (workspaceId: string, traceId: string): string =>
  uuidFromName(`trace:${workspaceId}:${traceId}`);

/** Trace and engram storage; every query filters by workspace. */
export function createTraceRepo(db: Db) {
  const traces = db.collection<TraceDoc>('traces');
  const engrams = db.collection<EngramDoc>('engrams');
  const places = db.collection<EngramPlaceDoc>('engram_places');
  return {
    traces,
    engrams,
    places,
    find: async (workspaceId: string, traceId: string) =>
      (await findById(traces, traceKey(workspaceId, traceId), { workspaceId, traceId })) ??
      traces.findOne({ workspaceId, traceId }),
    /** A page of the workspace's traces (`filter` holds the workspace; `scan` checks a search on the rows read). */
    list: (
      filter: Filter<TraceDoc> & { workspaceId: string },
      sort: PageSort,
      q: PageQuery,
      scan?: PageScan<TraceDoc>,
    ) => page(traces, filter, sort, q, { scan }),
    messages: (workspaceId: string, traceId: string, limit?: number) => {
      const cur = engrams.find({ workspaceId, traceId }).sort({ seq: 1, createdAt: 1 });
      return (limit ? cur.limit(limit) : cur).toArray();
    },
    findEngram: (workspaceId: string, id: string) => findById(engrams, id, { workspaceId }),
  };
}
export type TraceRepo = ReturnType<typeof createTraceRepo>;
