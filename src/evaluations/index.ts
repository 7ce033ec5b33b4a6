/**
 * Evaluations (docs/evaluations.md): the area's only door. Datasets and their versioned items,
 * evaluators (pure scoring in evaluators.ts; judge and pathway evaluators run as jobs), and
 * experiments run by the `experimentRun` workflow. Routes, activities and the composition root
 * import from here.
 */
export type {
  DatasetDoc,
  DatasetItem as DatasetItemRecord,
  EvaluatorSpec,
  ExperimentAggregates,
  ExperimentDoc,
  ExperimentItem as ExperimentItemRecord,
  ItemScore,
} from './model.js';
export type { EvaluationStore } from './store.js';
export { createEvaluationRepo, evaluationIndexes } from './store.mongo.js';
export {
  createEvaluationService,
  EXPERIMENT_WORKFLOW,
  experimentWorkflowId,
  outputOfResult,
  type ChildRun,
  type EvaluationService,
  type ExperimentPlan,
  type ExperimentRunInput,
  type ItemOutcome,
} from './service.js';
export * from './evaluators.js';
export { parseCsv, parseJsonl, csvRows } from './import.js';
export * from './schemas.js';
