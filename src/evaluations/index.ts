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
  // The decoded experiment (model.ts `Experiment`; `Experiment` here names the response schema);
  // its stored form (model.ts `ExperimentDoc`) stays in the area.
  Experiment as ExperimentRecord,
  ExperimentItem as ExperimentItemRecord,
} from './model.js';
export { createEvaluationRepo, evaluationIndexes } from './store.mongo.js';
export { createEvaluationService, type ChildRun, type ExperimentRunInput, type ItemOutcome } from './service.js';
export * from './evaluators.js';
export { parseCsv, parseJsonl, csvRows } from './import.js';
export * from './schemas.js';
