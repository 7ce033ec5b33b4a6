/**
 * The trace and engram model: the stored and decoded shapes, and the keys a trace and an engram's
 * place are found by. A leaf that store.ts (the contract), store.mongo.ts (the adapter) and
 * engrams.mongo.ts (its engram log) import.
 */
import type { Blob } from '../kernel/store/codec.js';
import { uuidFromName } from '../kernel/ids.js';

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
  /**
   * The share link whose conversation this is: set when a run the link started created the trace
   * (docs/shares.md). A link reaches only its own conversations. Null (or absent, on traces stored
   * before links were recorded) for every other trace.
   */
  shareId?: string | null;
  neuronId: string | null;
  title: string | null;
  titleSource: 'manual' | 'generated' | null;
  traceType: 'thread' | 'system';
  messageCount: number;
  cost: CostSummary;
  memoryIds: string[];
  metadata: Blob;
  /** Set on a fork (POST /v1/traces/:id/fork): the trace and the engram it was copied up to. */
  forkedFrom?: { traceId: string; engramId: string } | null;
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

/** A trace as services see it: its metadata decoded. */
export interface Trace extends Omit<TraceDoc, 'metadata'> {
  metadata: Record<string, unknown>;
}
/** An engram as services see it: its metadata decoded. */
export interface Engram extends Omit<EngramDoc, 'metadata'> {
  metadata: Record<string, unknown>;
}
/** A trace to create: its stored key is derived from its workspace and trace id. */
export type NewTrace = Omit<Trace, '_id'>;
/** An engram to append: its seq and the running totals are the append's; `cost` is this engram's own. */
export interface NewEngram extends Omit<Engram, 'seq' | 'totals'> {
  cost: CostSummary;
}

/** What a trace list may filter on (the workspace is the repository call's own argument). */
export interface TraceListFilter {
  brainId?: string;
  receptorId?: string;
  userId?: string;
  neuronId?: string;
  traceType?: 'thread' | 'system';
  createdAfter?: Date;
  createdBefore?: Date;
}
export type TraceSortField = 'createdAt' | 'updatedAt' | 'messageCount';

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

/**
 * The `_id` of the trace document of (workspace, trace id): a name-based UUID (SHA-1, version 5
 * layout), so a trace is found by key. FerretDB's SQLite backend, the default embedded store, scans
 * the whole collection for any filter but `_id` alone, and every run reads its trace several times.
 * Traces created before this have random ids and are found by the (workspace, trace) index, as
 * before (a key miss falls back to it).
 */
export const traceKey = (workspaceId: string, traceId: string): string =>
  uuidFromName(`trace:${workspaceId}:${traceId}`);
