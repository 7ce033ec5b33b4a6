import type { z } from 'zod';
import { SuccessBody } from '../../src/kernel/schemas.js';
import {
  Dataset,
  DatasetCreateBody,
  DatasetFromJobBody,
  DatasetImportBody,
  type DatasetItem,
  DatasetItemList,
  DatasetItemListQuery,
  DatasetItemParams,
  DatasetItemsAdded,
  DatasetItemsBody,
  DatasetList,
  DatasetListQuery,
  DatasetParams,
  DatasetUpdateBody,
  Experiment,
  ExperimentComparison,
  ExperimentCompareQuery,
  ExperimentCreateBody,
  ExperimentItemList,
  ExperimentItemListQuery,
  ExperimentList,
  ExperimentListQuery,
  ExperimentParams,
  type DatasetDoc,
  type DatasetItemRecord,
  type EvaluatorSpec,
  type ExperimentAggregates,
  type ExperimentRecord,
  type ExperimentItemRecord,
} from '../../src/evaluations/index.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ evaluations: s.evaluations }));

const tags = ['evaluations'];

const presentDataset = (d: DatasetDoc): z.input<typeof Dataset> => ({
  id: d._id,
  brain_id: d.brainId,
  name: d.name,
  description: d.description,
  version: d.version,
  item_count: d.itemCount,
  created_by: d.createdBy,
  created_at: d.createdAt.toISOString(),
  updated_at: d.updatedAt.toISOString(),
});

const presentItem = (i: DatasetItemRecord): z.input<typeof DatasetItem> => ({
  id: i._id,
  input: i.input,
  expected: i.expected ?? null,
  metadata: i.metadata,
  added_in_version: i.addedIn,
  removed_in_version: i.removedIn,
  source_job_id: i.sourceJobId,
  created_at: i.createdAt.toISOString(),
});

const presentEvaluator = (s: EvaluatorSpec): Record<string, unknown> => {
  const common = { type: s.type, name: s.name, pass_threshold: s.passThreshold };
  switch (s.type) {
    case 'exact':
      return { ...common, case_sensitive: s.caseSensitive };
    case 'contains':
      return { ...common, case_sensitive: s.caseSensitive, value: s.value };
    case 'regex':
      return { ...common, pattern: s.pattern, flags: s.flags };
    case 'json_schema':
      return { ...common, schema: s.schema };
    case 'numeric_close':
      return { ...common, tolerance: s.tolerance, relative: s.relative };
    case 'judge':
      return { ...common, neuron_id: s.neuronId, version: s.version, rubric: s.rubric };
    case 'pathway':
      return { ...common, pathway_id: s.pathwayId, version: s.version };
  }
};

const presentAggregates = (a: ExperimentAggregates) => ({
  items: a.items,
  scored: a.scored,
  failed: a.failed,
  pass_rate: a.passRate,
  mean_scores: a.meanScores,
  latency_p50_ms: a.latencyP50Ms,
  latency_p95_ms: a.latencyP95Ms,
  target_cost_usd: a.targetCostUsd,
  evaluator_cost_usd: a.evaluatorCostUsd,
  total_cost_usd: a.totalCostUsd,
  total_tokens: a.totalTokens,
});

const presentExperiment = (
  e: ExperimentRecord,
  live: { done: number; aggregates: ExperimentAggregates | null } = { done: 0, aggregates: e.aggregates },
): z.input<typeof Experiment> => {
  const done = e.status === 'completed' ? e.itemCount : live.done;
  return {
    id: e._id,
    name: e.name,
    brain_id: e.brainId,
    dataset_id: e.datasetId,
    dataset_version: e.datasetVersion,
    target: e.target,
    evaluators: e.evaluators.map(presentEvaluator),
    concurrency: e.concurrency,
    status: e.status,
    progress: e.itemCount ? Math.floor((done / e.itemCount) * 100) : 0,
    current_step: e.currentStep,
    failed_reason: e.failedReason,
    items_total: e.itemCount,
    items_done: done,
    aggregates: live.aggregates ? presentAggregates(live.aggregates) : null,
    created_by: e.createdBy,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
    finished_at: e.finishedAt?.toISOString() ?? null,
  };
};

const presentRun = (r: ExperimentItemRecord, item: DatasetItemRecord | null) => ({
  item_id: r.itemId,
  job_id: r.jobId,
  status: r.status,
  input: item?.input ?? null,
  expected: item?.expected ?? null,
  output: r.output ?? null,
  error: r.error,
  scores: r.scores.map((s) => ({
    evaluator: s.evaluator,
    score: s.score,
    passed: s.passed,
    reason: s.reason,
    job_id: s.jobId,
  })),
  passed: r.passed,
  latency_ms: r.latencyMs,
  input_tokens: r.inputTokens,
  output_tokens: r.outputTokens,
  total_tokens: r.totalTokens,
  cost_usd: r.costUsd,
  evaluator_cost_usd: r.evaluatorCostUsd,
});

const added = (out: { dataset: DatasetDoc; items: DatasetItemRecord[] }) => ({
  dataset: presentDataset(out.dataset),
  items: out.items.map(presentItem),
});

/**
 * Evaluations (docs/evaluations.md): datasets of a brain with versioned items, and experiments that
 * run a dataset version through a neuron or pathway version and score it. Any member of the
 * workspace reads and writes them, as neurons and pathways; with X-Brain-Id, another brain's are 404.
 * Static paths come before `:id` ones (the first registered match wins).
 */
export default [
  route({
    method: 'post',
    path: '/v1/datasets',
    summary: 'Create a dataset',
    status: 201,
    brain: 'required',
    body: DatasetCreateBody,
    response: Dataset,
    tags,
    description: 'A dataset of the brain; items given here make its version 1',
    examples: {
      request: { name: 'capitals', items: [{ input: 'Capital of France?', expected: 'Paris' }] },
    },
    handler: async ({ body, scope, services }) => presentDataset(await services.evaluations.createDataset(scope, body)),
  }),
  route({
    method: 'get',
    path: '/v1/datasets',
    summary: 'List datasets',
    brain: 'required',
    query: DatasetListQuery,
    response: DatasetList,
    tags,
    description: "The brain's datasets, newest first",
    handler: async ({ query, scope, services }) => {
      const p = await services.evaluations.listDatasets(scope, query);
      return { datasets: p.items.map(presentDataset), ...presentPage(p) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/datasets/:id',
    summary: 'Read a dataset',
    brain: 'optional',
    params: DatasetParams,
    response: Dataset,
    tags,
    handler: async ({ params, scope, services }) =>
      presentDataset(await services.evaluations.getDataset(scope, params.id)),
  }),
  route({
    method: 'patch',
    path: '/v1/datasets/:id',
    summary: 'Change a dataset',
    brain: 'optional',
    params: DatasetParams,
    body: DatasetUpdateBody,
    response: Dataset,
    tags,
    description: 'Changes the name or description (not a new version: versions count changes to the items)',
    handler: async ({ params, body, scope, services }) =>
      presentDataset(await services.evaluations.updateDataset(scope, params.id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/datasets/:id',
    summary: 'Delete a dataset',
    brain: 'optional',
    params: DatasetParams,
    response: SuccessBody,
    tags,
    description: 'Removes the dataset and its items; experiments that ran on it keep their results',
    handler: async ({ params, scope, services }) => {
      await services.evaluations.removeDataset(scope, params.id);
      return { success: true as const };
    },
  }),
  route({
    method: 'post',
    path: '/v1/datasets/:id/items/from-job',
    summary: 'Add a run to a dataset',
    status: 201,
    brain: 'optional',
    params: DatasetParams,
    body: DatasetFromJobBody,
    response: DatasetItemsAdded,
    tags,
    description:
      "A completed job of the workspace as an item: its input (a pathway run's input, a neuron run's message) and its output as the expected value",
    handler: async ({ params, body, scope, services }) =>
      added(await services.evaluations.addFromJob(scope, params.id, body)),
  }),
  route({
    method: 'post',
    path: '/v1/datasets/:id/import',
    summary: 'Import items into a dataset',
    status: 201,
    brain: 'optional',
    params: DatasetParams,
    body: DatasetImportBody,
    response: DatasetItemsAdded,
    tags,
    description: 'JSONL or CSV text (at most 4 MB) as the next version; errors name the line',
    examples: { request: { format: 'csv', content: 'input,expected\n2+2,4\n3*3,9\n' } },
    handler: async ({ params, body, scope, services }) =>
      added(await services.evaluations.importItems(scope, params.id, body)),
  }),
  route({
    method: 'post',
    path: '/v1/datasets/:id/items',
    summary: 'Add items to a dataset',
    status: 201,
    brain: 'optional',
    params: DatasetParams,
    body: DatasetItemsBody,
    response: DatasetItemsAdded,
    tags,
    description: 'One item, or `{ items: [...] }` (at most 1,000): the next version of the dataset',
    handler: async ({ params, body, scope, services }) =>
      added(await services.evaluations.addItems(scope, params.id, body)),
  }),
  route({
    method: 'get',
    path: '/v1/datasets/:id/items',
    summary: "List a dataset's items",
    brain: 'optional',
    params: DatasetParams,
    query: DatasetItemListQuery,
    response: DatasetItemList,
    tags,
    description: 'The items of a version (default: the current one), in the order they were added',
    handler: async ({ params, query, scope, services }) => {
      const { version, page } = await services.evaluations.listItems(scope, params.id, query);
      return { items: page.items.map(presentItem), version, ...presentPage(page) };
    },
  }),
  route({
    method: 'delete',
    path: '/v1/datasets/:id/items/:item_id',
    summary: 'Remove an item from a dataset',
    brain: 'optional',
    params: DatasetItemParams,
    response: Dataset,
    tags,
    description: 'The next version no longer has the item; earlier versions still do',
    handler: async ({ params, scope, services }) =>
      presentDataset(await services.evaluations.removeItem(scope, params.id, params.item_id)),
  }),

  route({
    method: 'post',
    path: '/v1/experiments',
    summary: 'Start an experiment',
    status: 202,
    brain: 'optional',
    body: ExperimentCreateBody,
    response: Experiment,
    tags,
    description:
      'Runs every item of the dataset version through the target (a child job each, `concurrency` at a time) and scores it with every evaluator; follow it with GET /v1/experiments/:id',
    examples: {
      request: {
        dataset_id: '6f1c2a1e-3b0e-4c55-9a43-1d2e3f405060',
        target: { neuron_id: 'support-agent', version: 4 },
        evaluators: [{ type: 'contains' }, { type: 'judge', neuron_id: 'grader', rubric: 'Is the answer correct?' }],
        concurrency: 5,
      },
    },
    handler: async ({ body, scope, services }) =>
      presentExperiment(await services.evaluations.createExperiment(scope, body)),
  }),
  route({
    method: 'get',
    path: '/v1/experiments',
    summary: 'List experiments',
    brain: 'optional',
    query: ExperimentListQuery,
    response: ExperimentList,
    tags,
    description: "The workspace's experiments (the brain's with X-Brain-Id), newest first",
    handler: async ({ query, scope, services }) => {
      const p = await services.evaluations.listExperiments(scope, query);
      return { experiments: p.items.map((e) => presentExperiment(e)), ...presentPage(p) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/experiments/compare',
    summary: 'Compare experiments item by item',
    brain: 'optional',
    query: ExperimentCompareQuery,
    response: ExperimentComparison,
    tags,
    description:
      'Two to five experiments lined up by dataset item: outputs, scores, and what changed against the first (score deltas, output changed, pass changed)',
    handler: async ({ query, scope, services }) => {
      const c = await services.evaluations.compare(scope, query.ids);
      return {
        experiments: c.experiments.map((e) => presentExperiment(e)),
        items: c.items.map((row) => ({
          item_id: row.itemId,
          input: row.item?.input ?? null,
          expected: row.item?.expected ?? null,
          runs: row.runs.map((r, i) =>
            r
              ? {
                  experiment_id: c.experiments[i]._id,
                  output: r.output ?? null,
                  status: r.status,
                  passed: r.passed,
                  scores: Object.fromEntries(r.scores.map((s) => [s.evaluator, s.score])),
                  latency_ms: r.latencyMs,
                  cost_usd: r.costUsd,
                }
              : null,
          ),
          changed: { output: row.changed.output, passed: row.changed.passed, score_deltas: row.changed.scoreDeltas },
        })),
      };
    },
  }),
  route({
    method: 'get',
    path: '/v1/experiments/:id',
    summary: 'Read an experiment',
    brain: 'optional',
    params: ExperimentParams,
    response: Experiment,
    tags,
    description: 'Progress while it runs (items done, aggregates so far); the final aggregates once it ends',
    handler: async ({ params, scope, services }) => {
      const r = await services.evaluations.getExperiment(scope, params.id);
      return presentExperiment(r.experiment, r);
    },
  }),
  route({
    method: 'get',
    path: '/v1/experiments/:id/items',
    summary: "List an experiment's items",
    brain: 'optional',
    params: ExperimentParams,
    query: ExperimentItemListQuery,
    response: ExperimentItemList,
    tags,
    description: 'Per item: the output, each score and reason, latency, tokens and cost (from the usage ledger)',
    handler: async ({ params, query, scope, services }) => {
      const p = await services.evaluations.listExperimentItems(scope, params.id, query);
      return { items: p.items.map((x) => presentRun(x.run, x.item)), ...presentPage(p) };
    },
  }),
  route({
    method: 'delete',
    path: '/v1/experiments/:id',
    summary: 'Delete an experiment',
    brain: 'optional',
    params: ExperimentParams,
    response: SuccessBody,
    tags,
    description:
      "Removes an ended experiment and its per-item results (409 while it runs: cancel it first); its runs' jobs and their usage stay",
    handler: async ({ params, scope, services }) => {
      await services.evaluations.removeExperiment(scope, params.id);
      return { success: true as const };
    },
  }),
  route({
    method: 'post',
    path: '/v1/experiments/:id/cancel',
    summary: 'Cancel an experiment',
    brain: 'optional',
    params: ExperimentParams,
    response: Experiment,
    tags,
    description:
      'Stops it: runs in flight are cancelled, no new item starts; items scored so far stay (409 once ended)',
    handler: async ({ params, scope, services }) =>
      presentExperiment(await services.evaluations.cancelExperiment(scope, params.id)),
  }),
];
