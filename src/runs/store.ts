import type { PreparedRunData } from '../temporal/definitions.js';
import type { ModelStep, StoredStart, ToolStep } from './model.js';

/**
 * What the run steps ask of their store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter): a neuron run's working set (its context, written once, and its steps, by
 * natural key) and the stored workflow start an API that died before starting it leaves behind.
 */
export interface RunStore {
  /** Stores the context once (a retried prepare finds it there); false when one was stored before. */
  putContext(workspaceId: string, jobId: string, data: PreparedRunData, start?: StoredStart): Promise<boolean>;
  /** Runs stored before `olderThan` whose workflow start no sweep has confirmed yet, at most `limit` (200 by default). */
  unconfirmedStarts(
    olderThan: Date,
    limit?: number,
  ): Promise<{ jobId: string; workspaceId: string; start: StoredStart }[]>;
  /** Its workflow exists: the sweeps no longer look at this run. */
  confirmStart(jobId: string): Promise<void>;
  /** The stored start of one run (null when none is kept, or it was confirmed). */
  storedStart(jobId: string): Promise<StoredStart | null>;
  /** The run's context (null when none is stored). */
  context(jobId: string): Promise<PreparedRunData | null>;
  /** Stores a model turn attempt (by its key: a retried activity rewrites it). */
  putModel(jobId: string, s: ModelStep): Promise<void>;
  /** Stores a tool call's result (by its key: a retried activity rewrites it). */
  putTool(jobId: string, s: ToolStep): Promise<void>;
  /** The accepted attempt of each turn (in order) and every tool result. */
  steps(jobId: string, accepted: number[]): Promise<{ models: ModelStep[]; tools: ToolStep[] }>;
  /** Drops a finished run's working set (the engram and the job keep what lasts). */
  drop(jobId: string): Promise<void>;
}
