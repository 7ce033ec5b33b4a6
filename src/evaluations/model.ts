import type { Blob } from '../kernel/store/codec.js';
import type { RunScope } from '../temporal/definitions.js';

/**
 * A dataset (docs/evaluations.md): named examples of a brain. `version` counts changes to its
 * items (every add, import or removal makes the next version); items record the version they
 * were added in and the one they were removed in, so any version can be read back.
 */
export interface DatasetDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  name: string;
  description: string | null;
  /** The current version: 0 before any item, then one more per change to the items. */
  version: number;
  /** Items at the current version. */
  itemCount: number;
  /** The next item's position (items keep the order they were added in). */
  nextSeq: number;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One example of a dataset. `input`, `expected` and `metadata` are client JSON, stored through the blob codec. */
export interface DatasetItemDoc {
  _id: string;
  workspaceId: string;
  datasetId: string;
  seq: number;
  input: Blob;
  expected: Blob | null;
  metadata: Blob | null;
  /** The dataset version that added the item. */
  addedIn: number;
  /** The dataset version that removed it (null: still in the dataset). */
  removedIn: number | null;
  /** Set on an item made from a run (POST /v1/datasets/:id/items/from-job). */
  sourceJobId: string | null;
  createdAt: Date;
}

/** An item as services see it (decoded). */
export interface DatasetItem extends Omit<DatasetItemDoc, 'input' | 'expected' | 'metadata'> {
  input: unknown;
  expected: unknown;
  metadata: Record<string, unknown> | null;
}

/** What an experiment runs: a neuron or a pathway at a version. */
interface ExperimentTarget {
  kind: 'neuron' | 'pathway';
  id: string;
  version: number;
}

/** An evaluator as stored on an experiment (validated by schemas.ts; its `name` is unique in the experiment). */
export type EvaluatorSpec =
  | { type: 'exact'; name: string; passThreshold: number; caseSensitive: boolean }
  | { type: 'contains'; name: string; passThreshold: number; caseSensitive: boolean; value: string | null }
  | { type: 'regex'; name: string; passThreshold: number; pattern: string; flags: string }
  | { type: 'json_schema'; name: string; passThreshold: number; schema: Record<string, unknown> }
  | { type: 'numeric_close'; name: string; passThreshold: number; tolerance: number; relative: boolean }
  | { type: 'judge'; name: string; passThreshold: number; neuronId: string; version: number; rubric: string }
  | { type: 'pathway'; name: string; passThreshold: number; pathwayId: string; version: number };

/** Evaluators that run as jobs of their own (their model calls are billed and in the ledger). */
export type JobEvaluatorSpec = Extract<EvaluatorSpec, { type: 'judge' | 'pathway' }>;

export type ExperimentStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
export const EXPERIMENT_TERMINAL: readonly ExperimentStatus[] = ['completed', 'failed', 'cancelled'];

/** What an experiment adds up to once it ends (and, while it runs, so far). */
export interface ExperimentAggregates {
  items: number;
  scored: number;
  failed: number;
  passRate: number | null;
  meanScores: Record<string, number | null>;
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
  targetCostUsd: number;
  evaluatorCostUsd: number;
  totalCostUsd: number;
  totalTokens: number;
}

/**
 * An experiment as stored: a dataset version run through a target and scored by evaluators, by
 * the `experimentRun` workflow. Services see it decoded (Experiment).
 */
export interface ExperimentDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  name: string | null;
  datasetId: string;
  datasetVersion: number;
  target: ExperimentTarget;
  evaluators: EvaluatorSpec[];
  concurrency: number;
  status: ExperimentStatus;
  itemCount: number;
  currentStep: string | null;
  failedReason: string | null;
  aggregates: ExperimentAggregates | null;
  /** The caller's scope at creation (runs act as the caller), kept as plain data (the encoded RunScope). */
  scope: Blob;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/** An experiment as services see it (decoded). */
export interface Experiment extends Omit<ExperimentDoc, 'scope'> {
  /** The caller's scope at creation (runs act as the caller). */
  scope: RunScope;
}

/** One evaluator's verdict on one item. */
export interface ItemScore {
  evaluator: string;
  score: number;
  passed: boolean;
  reason: string;
  /** The evaluator's own job (judge, pathway). */
  jobId: string | null;
}

/**
 * One dataset item's run in an experiment. `_id` is name-based on (experiment, item): the row is
 * claimed once with the target job's id, so a retried step finds the job it started.
 */
export interface ExperimentItemDoc {
  _id: string;
  workspaceId: string;
  experimentId: string;
  itemId: string;
  seq: number;
  /** The target run's job (its workflow id). */
  jobId: string;
  status: 'running' | 'scored' | 'failed';
  output: Blob | null;
  error: string | null;
  scores: ItemScore[];
  passed: boolean;
  latencyMs: number | null;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  costUsd: number;
  evaluatorCostUsd: number;
  createdAt: Date;
  finishedAt: Date | null;
}

/** An item run as services see it (decoded; `output` null when there is none). */
export interface ExperimentItem extends Omit<ExperimentItemDoc, 'output'> {
  output: unknown;
}
