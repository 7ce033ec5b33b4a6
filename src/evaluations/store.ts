import type { Page, PageQuery } from '../kernel/store/paging.js';
import type { DatasetDoc, DatasetItem, Experiment, ExperimentItem } from './model.js';

export type { PageQuery } from '../kernel/store/paging.js';

/** An item to add: its JSON values (the store encodes them). */
export interface NewItem {
  input: unknown;
  expected?: unknown;
  metadata?: Record<string, unknown>;
  sourceJobId?: string | null;
}

/**
 * What the evaluations service asks of its store, in domain terms (store.mongo.ts is the MongoDB
 * and FerretDB adapter). Every operation takes the workspace first. Values go in and come out
 * decoded (item values, an experiment's run scope, a run's output); the store encodes them.
 */
export interface EvaluationStore {
  createDataset(doc: DatasetDoc): Promise<void>;
  getDataset(workspaceId: string, id: string): Promise<DatasetDoc | null>;
  pageDatasets(workspaceId: string, brainId: string, q: PageQuery): Promise<Page<DatasetDoc>>;
  updateDataset(
    workspaceId: string,
    id: string,
    set: Partial<Pick<DatasetDoc, 'name' | 'description'>>,
  ): Promise<DatasetDoc | null>;
  /** Removes the dataset and its items; false when the workspace has none of that id. */
  removeDataset(workspaceId: string, id: string): Promise<boolean>;
  /**
   * Adds items as the dataset's next version (one version per call); null when the dataset is
   * gone. Refuses (returns 'full') past `max` items.
   */
  addItems(
    workspaceId: string,
    datasetId: string,
    items: NewItem[],
    max: number,
  ): Promise<{ dataset: DatasetDoc; items: DatasetItem[] } | 'full' | null>;
  /** Removes an item as the dataset's next version; null when the dataset or a live item of that id is missing. */
  removeItem(workspaceId: string, datasetId: string, itemId: string): Promise<DatasetDoc | null>;
  /** A page of the items at `version`, in the order they were added. */
  pageItems(workspaceId: string, datasetId: string, version: number, q: PageQuery): Promise<Page<DatasetItem>>;
  /** The ids of the items at `version` in order (an experiment's plan; at most `max`). */
  itemIdsAt(workspaceId: string, datasetId: string, version: number, max: number): Promise<string[]>;
  /** How many items `version` has. */
  countAt(workspaceId: string, datasetId: string, version: number): Promise<number>;
  getItem(workspaceId: string, itemId: string): Promise<DatasetItem | null>;
  getItems(workspaceId: string, itemIds: string[]): Promise<DatasetItem[]>;

  createExperiment(e: Experiment): Promise<void>;
  /** Removes an experiment and its item rows; false when it did not exist. */
  removeExperiment(workspaceId: string, id: string): Promise<boolean>;
  getExperiment(workspaceId: string, id: string): Promise<Experiment | null>;
  pageExperiments(
    workspaceId: string,
    filter: { brainId?: string; datasetId?: string },
    q: PageQuery,
  ): Promise<Page<Experiment>>;
  /** Moves an experiment that has not ended; false when it has ended (or is missing). */
  setExperiment(
    workspaceId: string,
    id: string,
    set: Partial<Pick<Experiment, 'status' | 'currentStep' | 'failedReason' | 'aggregates' | 'finishedAt'>>,
  ): Promise<boolean>;
  /** Sets the aggregates of an experiment whatever its status (the final figures of a cancelled one). */
  setAggregates(workspaceId: string, id: string, aggregates: Experiment['aggregates']): Promise<void>;

  /** Claims an item's run with its job id; the stored row (a retry finds the first claim's job). */
  claimItem(row: ExperimentItem): Promise<ExperimentItem>;
  /** Records an item's outcome once (a row already ended is left as it is); `output` null or undefined: none. */
  finishItem(
    workspaceId: string,
    id: string,
    set: Pick<
      ExperimentItem,
      | 'status'
      | 'output'
      | 'error'
      | 'scores'
      | 'passed'
      | 'latencyMs'
      | 'inputTokens'
      | 'outputTokens'
      | 'totalTokens'
      | 'costUsd'
      | 'evaluatorCostUsd'
      | 'finishedAt'
    >,
  ): Promise<void>;
  pageExperimentItems(workspaceId: string, experimentId: string, q: PageQuery): Promise<Page<ExperimentItem>>;
  /** Every item row of an experiment (at most EVAL_LIMITS.experimentItems). */
  experimentItems(workspaceId: string, experimentId: string): Promise<ExperimentItem[]>;
}
