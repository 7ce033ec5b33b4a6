import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { JobRecord as Job } from '../jobs/index.js';
import { AppError, conflict, notFound, validationError } from '../kernel/errors.js';
import { uuidFromName } from '../kernel/ids.js';
import { assertJsonDepth } from '../kernel/json-depth.js';
import type { Logger } from '../kernel/logger.js';
import type { Scope } from '../kernel/scope.js';
import type { SubPathwayCall } from '../pathways/index.js';
import { fromRunScope, toRunScope } from '../runs/index.js';
import {
  BrainIdKey,
  JobKindKey,
  WorkspaceIdKey,
  type NeuronRunInput,
  type PathwayRunInput,
  type PreparedRunData,
} from '../temporal/definitions.js';
import type { WebhookEventRecord } from '../webhooks/index.js';
import {
  aggregate,
  judgeMessage,
  judgeVerdict,
  pathwayVerdict,
  schemaProblem,
  scoreBuiltin,
  scored,
  textOf,
  type BuiltinSpec,
} from './evaluators.js';
import { parseCsv, parseJsonl } from './import.js';
import {
  EXPERIMENT_TERMINAL,
  type DatasetDoc,
  type DatasetItem,
  type EvaluatorSpec,
  type Experiment,
  type ExperimentItem,
  type ItemScore,
  type JobEvaluatorSpec,
} from './model.js';
import {
  EVAL_LIMITS,
  type DatasetCreateBody,
  type DatasetFromJobBody,
  type DatasetImportBody,
  type DatasetItemInput,
  type DatasetItemsBody,
  type DatasetUpdateBody,
  type EvaluatorConfig,
  type ExperimentCreateBody,
} from './schemas.js';
import type { EvaluationStore, NewItem, PageQuery } from './store.js';

/** The workflow type of an experiment; its workflow id is `experiment-<id>` (docs/evaluations.md). */
const EXPERIMENT_WORKFLOW = 'experimentRun';
const experimentWorkflowId = (id: string) => `experiment-${id}`;

/** What the experiment workflow is started with (ids only; everything else is read by its activities). */
export interface ExperimentRunInput {
  workspaceId: string;
  experimentId: string;
}

/** The experiment's plan, as its workflow needs it. */
interface ExperimentPlan {
  itemIds: string[];
  concurrency: number;
  /** The evaluators that run as jobs (judge, pathway), by name. */
  jobEvaluators: string[];
  /** Item ids whose rows have ended already (a resumed or re-run workflow skips them). */
  ended: string[];
}

/** A child run the workflow starts: a neuron run or a pathway run, with its job id as workflow id. */
export type ChildRun =
  | { kind: 'neuron'; jobId: string; neuronId: string; input: NeuronRunInput; summary: string }
  | { kind: 'pathway'; jobId: string; pathwayId: string; input: PathwayRunInput; summary: string };

/** How the workflow reports one item back for scoring. */
export interface ItemOutcome {
  ref: ExperimentRunInput;
  itemId: string;
  jobId: string;
  /** The target run's failure, or null. */
  failed: string | null;
  /** Each job evaluator's job (and its failure). */
  evaluatorJobs: { name: string; jobId: string; failed: string | null }[];
}

export interface EvaluationDeps {
  store: EvaluationStore;
  neurons: {
    resolve(scope: Scope, idOrSlug: string): Promise<{ _id: string; version: number; brainId: string }>;
    snapshot(scope: Scope, neuronId: string, version: number): Promise<unknown>;
  };
  pathways: {
    getForChildRun(
      scope: Scope,
      id: string,
      version?: number,
    ): Promise<{ pathway: { _id: string; brainId: string }; version: number }>;
  };
  pathwayRuns: { prepareSubPathway(c: SubPathwayCall): Promise<PathwayRunInput> };
  jobs: { status(scope: Scope, id: string): Promise<Job>; repoFind(id: string): Promise<Job | null> };
  usage: {
    jobTotals(
      workspaceId: string,
      jobId: string,
      whole?: boolean,
    ): Promise<{ inputTokens: number; outputTokens: number; totalTokens: number; costUsd: number }>;
  };
  /** A neuron run's stored context (its user message, for an item made from a neuron job). */
  runContext(jobId: string): Promise<PreparedRunData | null>;
  /** A trace's newest engrams, oldest first (the message a top-level neuron run answered). */
  traceMessages(
    scope: Scope,
    traceId: string,
    newest: number,
  ): Promise<{ sourceType: string; jobId: string | null; content: { content: string } }[]>;
  webhooks: { recordEvent(e: WebhookEventRecord): Promise<void> };
  temporal: Client;
  taskQueue: string;
  log: Logger;
}

const datasetNotFound = () => notFound('Dataset');
const experimentNotFound = () => notFound('Experiment');

/** A run's output as evaluators see it: a completion's JSON or the reply (neurons), the output node's value (pathways). */
function outputOfResult(result: unknown): unknown {
  if (typeof result !== 'object' || result === null) return result ?? null;
  const r = result as Record<string, unknown>;
  if (r.output !== undefined) return r.output;
  return r.text ?? null;
}

/** A dataset input as a neuron's message: a string as it is, anything else as JSON. */
const messageOf = (input: unknown): string => textOf(input) || '(empty input)';
/** A dataset input as a pathway's input: an object as it is, anything else as `{ value }`. */
const pathwayInputOf = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };

async function dataset({ store }: EvaluationDeps, scope: Scope, id: string): Promise<DatasetDoc> {
  const ds = await store.getDataset(scope.workspaceId, id);
  if (!ds || (scope.brainId && ds.brainId !== scope.brainId)) throw datasetNotFound();
  return ds;
}

async function experiment({ store }: EvaluationDeps, scope: Scope, id: string): Promise<Experiment> {
  const e = await store.getExperiment(scope.workspaceId, id);
  if (!e || (scope.brainId && e.brainId !== scope.brainId)) throw experimentNotFound();
  return e;
}

/** Checks items' size and depth, naming the item. */
function checked(items: NewItem[], field = 'items'): NewItem[] {
  items.forEach((it, i) => {
    assertJsonDepth(it, `${field}[${i}]`);
    const bytes = Buffer.byteLength(JSON.stringify({ i: it.input, e: it.expected, m: it.metadata }));
    if (bytes > EVAL_LIMITS.itemBytes)
      throw validationError(`${field}[${i}]: ${bytes} bytes of JSON, at most ${EVAL_LIMITS.itemBytes}`);
  });
  return items;
}

async function add(d: EvaluationDeps, scope: Scope, id: string, items: NewItem[]) {
  const { store } = d;
  const ds = await dataset(d, scope, id);
  const out = await store.addItems(scope.workspaceId, ds._id, checked(items), EVAL_LIMITS.datasetItems);
  if (out === null) throw datasetNotFound();
  if (out === 'full')
    throw validationError(`items: a dataset holds at most ${EVAL_LIMITS.datasetItems} items (it has ${ds.itemCount})`);
  return out;
}

const toNew = (it: DatasetItemInput): NewItem => ({
  input: it.input,
  ...(it.expected !== undefined ? { expected: it.expected } : {}),
  ...(it.metadata !== undefined ? { metadata: it.metadata } : {}),
});

/** Resolves evaluator configs to stored specs: names unique, neurons and pathways of the workspace pinned to a version. */
async function specsOf(d: EvaluationDeps, scope: Scope, configs: EvaluatorConfig[]): Promise<EvaluatorSpec[]> {
  const seen = new Map<string, number>();
  const specs: EvaluatorSpec[] = [];
  for (const [i, c] of configs.entries()) {
    const count = (seen.get(c.type) ?? 0) + 1;
    seen.set(c.type, count);
    const name = c.name ?? (configs.filter((x) => x.type === c.type).length > 1 ? `${c.type}_${count}` : c.type);
    if (specs.some((s) => s.name === name)) throw validationError(`evaluators[${i}].name: "${name}" is used twice`);
    const t = (dflt: number) => c.pass_threshold ?? dflt;
    switch (c.type) {
      case 'exact':
        specs.push({ type: 'exact', name, passThreshold: t(1), caseSensitive: c.case_sensitive });
        break;
      case 'contains':
        specs.push({
          type: 'contains',
          name,
          passThreshold: t(1),
          caseSensitive: c.case_sensitive,
          value: c.value ?? null,
        });
        break;
      case 'regex': {
        const refused = regexRefusal(c.pattern, c.flags);
        if (refused) throw validationError(`evaluators[${i}].pattern: ${refused}`);
        specs.push({ type: 'regex', name, passThreshold: t(1), pattern: c.pattern, flags: c.flags });
        break;
      }
      case 'json_schema': {
        assertJsonDepth(c.schema, `evaluators[${i}].schema`, 16);
        const problem = schemaProblem(c.schema);
        if (problem) throw validationError(`evaluators[${i}].schema: ${problem}`);
        specs.push({ type: 'json_schema', name, passThreshold: t(1), schema: c.schema });
        break;
      }
      case 'numeric_close':
        specs.push({
          type: 'numeric_close',
          name,
          passThreshold: t(1),
          tolerance: c.tolerance,
          relative: c.relative,
        });
        break;
      case 'judge': {
        const n = await d.neurons.resolve(scope, c.neuron_id);
        const version = c.version ?? n.version;
        await d.neurons.snapshot(scope, n._id, version);
        specs.push({ type: 'judge', name, passThreshold: t(0.5), neuronId: n._id, version, rubric: c.rubric });
        break;
      }
      case 'pathway': {
        const p = await d.pathways.getForChildRun(scope, c.pathway_id, c.version);
        specs.push({ type: 'pathway', name, passThreshold: t(0.5), pathwayId: p.pathway._id, version: p.version });
        break;
      }
    }
  }
  return specs;
}

/** The experiment's own aggregates, from its item rows (bounded: at most EVAL_LIMITS.experimentItems). */
const figures = (e: Experiment, rows: ExperimentItem[]) =>
  aggregate(
    e.evaluators.map((s) => s.name),
    e.itemCount,
    rows,
  );

/** A child job of an item: the target or a job evaluator, recorded under the experiment (its parent job id). */
async function childRun(
  d: EvaluationDeps,
  e: Experiment,
  jobId: string,
  run:
    | { kind: 'neuron'; neuronId: string; version: number; message: string }
    | { kind: 'pathway'; pathwayId: string; version: number; input: Record<string, unknown> },
  summary: string,
): Promise<ChildRun> {
  const scope = { ...fromRunScope(e.scope), brainId: e.brainId };
  if (run.kind === 'neuron') {
    const input: NeuronRunInput = {
      jobId,
      scope: toRunScope(scope),
      neuronId: run.neuronId,
      neuronVersion: run.version,
      // Each run has a trace of its own (system traces: not in the brain's conversations).
      traceId: uuidFromName(`experiment-trace:${jobId}`),
      traceType: 'system',
      message: run.message,
      userEngramId: null,
      depth: 1,
      maxTurns: 8,
      parentJobId: e._id,
      pathwayContext: null,
    };
    return { kind: 'neuron', jobId, neuronId: run.neuronId, input, summary };
  }
  const input = await d.pathwayRuns.prepareSubPathway({
    // The experiment stands as the parent job; the run is its own root (its ledger rows carry its id as run).
    parent: {
      jobId: e._id,
      scope: toRunScope(scope),
      traceId: uuidFromName(`experiment-trace:${jobId}`),
      depth: 0,
      rootJobId: jobId,
    },
    jobId,
    pathwayId: run.pathwayId,
    version: run.version,
    input: run.input,
  });
  return { kind: 'pathway', jobId, pathwayId: run.pathwayId, input, summary };
}

const runRef = (d: EvaluationDeps, workspaceId: string, jobId: string) =>
  d.jobs.repoFind(jobId).then((j) => (j && j.workspaceId === workspaceId ? j : null));

async function announce(d: EvaluationDeps, e: Experiment, status: 'completed' | 'failed', reason: string | null) {
  await d.webhooks.recordEvent({
    workspaceId: e.workspaceId,
    event: status === 'completed' ? 'experiment.completed' : 'experiment.failed',
    key: `experiment.${status}:${e._id}`,
    at: new Date(),
    data: {
      experiment_id: e._id,
      brain_id: e.brainId,
      dataset_id: e.datasetId,
      dataset_version: e.datasetVersion,
      status,
      failed_reason: reason,
      pass_rate: e.aggregates?.passRate ?? null,
      total_cost_usd: e.aggregates?.totalCostUsd ?? null,
    },
  });
}

/** Datasets: their CRUD, their versioned items, imports and items made from runs. */
function createDatasetMethods(d: EvaluationDeps) {
  const { store } = d;
  return {
    async createDataset(scope: Scope, body: DatasetCreateBody): Promise<DatasetDoc> {
      if (!scope.brainId) throw validationError('X-Brain-Id: a dataset belongs to a brain');
      const now = new Date();
      const doc: DatasetDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId: scope.brainId,
        name: body.name,
        description: body.description ?? null,
        version: 0,
        itemCount: 0,
        nextSeq: 0,
        createdBy: scope.userId,
        createdAt: now,
        updatedAt: now,
      };
      if (body.items?.length) checked(body.items.map(toNew));
      await store.createDataset(doc);
      if (!body.items?.length) return doc;
      return (await add(d, scope, doc._id, body.items.map(toNew))).dataset;
    },
    listDatasets: (scope: Scope, q: PageQuery) => {
      if (!scope.brainId) throw validationError('X-Brain-Id: datasets are listed per brain');
      return store.pageDatasets(scope.workspaceId, scope.brainId, q);
    },
    getDataset: (scope: Scope, id: string): Promise<DatasetDoc> => dataset(d, scope, id),
    async updateDataset(scope: Scope, id: string, body: DatasetUpdateBody): Promise<DatasetDoc> {
      await dataset(d, scope, id);
      const out = await store.updateDataset(scope.workspaceId, id, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
      });
      if (!out) throw datasetNotFound();
      return out;
    },
    async removeDataset(scope: Scope, id: string): Promise<void> {
      await dataset(d, scope, id);
      if (!(await store.removeDataset(scope.workspaceId, id))) throw datasetNotFound();
    },
    addItems: (scope: Scope, id: string, body: DatasetItemsBody) =>
      add(
        d,
        scope,
        id,
        'items' in body && Array.isArray(body.items) ? body.items.map(toNew) : [toNew(body as DatasetItemInput)],
      ),
    async removeItem(scope: Scope, id: string, itemId: string): Promise<DatasetDoc> {
      await dataset(d, scope, id);
      const out = await store.removeItem(scope.workspaceId, id, itemId);
      if (!out) throw notFound('Dataset item');
      return out;
    },
    async listItems(scope: Scope, id: string, q: PageQuery & { version?: number }) {
      const ds = await dataset(d, scope, id);
      const version = q.version ?? ds.version;
      if (version > ds.version) throw validationError(`version: the dataset is at version ${ds.version}`);
      return { version, page: await store.pageItems(scope.workspaceId, id, version, q) };
    },
    /** JSONL or CSV text as the dataset's next version (one version for the whole import). */
    importItems(scope: Scope, id: string, body: DatasetImportBody) {
      const items =
        body.format === 'jsonl'
          ? parseJsonl(body.content, EVAL_LIMITS.datasetItems)
          : parseCsv(body.content, EVAL_LIMITS.datasetItems);
      return add(d, scope, id, items);
    },
    /**
     * A run as an item: its input (a pathway run's input; a neuron run's message) and its output as
     * the expected value (unless the body gives one). The job must be the caller workspace's (404)
     * and completed (409).
     */
    async addFromJob(scope: Scope, id: string, body: DatasetFromJobBody) {
      await dataset(d, scope, id);
      const wsScope: Scope = { ...scope, brainId: undefined };
      const job = await d.jobs.status(wsScope, body.job_id);
      if (job.status !== 'completed')
        throw conflict(`job_id: the job is ${job.status}; only a completed run can be added`);
      let input: unknown = job.input;
      if (input === undefined && job.kind === 'neuron') {
        const ctx = await d.runContext(job._id);
        input = ctx?.messages.filter((m) => m.role === 'user').at(-1)?.content;
        // A top-level invoke keeps its message in the trace: the human turn before the run's reply.
        if (input === undefined && job.traceId) {
          const engrams = await d.traceMessages(wsScope, job.traceId, 200);
          const reply = engrams.findIndex((e) => e.jobId === job._id && e.sourceType === 'neuron');
          input = engrams
            .slice(0, reply < 0 ? 0 : reply)
            .filter((e) => e.sourceType !== 'neuron')
            .at(-1)?.content.content;
        }
      }
      // An experiment's own run: its input is the dataset item it ran (its message is not a trace's human turn).
      if (input === undefined && job.parentJobId) {
        const run = (await store.getExperiment(scope.workspaceId, job.parentJobId))
          ? (await store.experimentItems(scope.workspaceId, job.parentJobId)).find((r) => r.jobId === job._id)
          : undefined;
        if (run) input = (await store.getItem(scope.workspaceId, run.itemId))?.input;
      }
      if (input === undefined) throw validationError(`job_id: the ${job.kind} job has no recorded input`);
      return add(d, scope, id, [
        {
          input,
          expected: body.expected !== undefined ? body.expected : outputOfResult(job.result),
          metadata: { ...(body.metadata ?? {}), source_job_id: job._id, source_kind: job.kind },
          sourceJobId: job._id,
        },
      ]);
    },
  };
}

/** Experiments: the start of one (its workflow), lists, removal and cancel. */
function createExperimentMethods(d: EvaluationDeps) {
  const { store } = d;
  return {
    async createExperiment(scope: Scope, body: ExperimentCreateBody): Promise<Experiment> {
      const ds = await dataset(d, scope, body.dataset_id);
      const bscope: Scope = { ...scope, brainId: ds.brainId };
      const version = body.dataset_version ?? ds.version;
      if (version > ds.version) throw validationError(`dataset_version: the dataset is at version ${ds.version}`);
      const count = await store.countAt(scope.workspaceId, ds._id, version);
      if (count === 0) throw validationError(`dataset_id: the dataset has no items at version ${version}`);
      if (count > EVAL_LIMITS.experimentItems)
        throw validationError(`dataset_id: ${count} items; an experiment runs at most ${EVAL_LIMITS.experimentItems}`);
      let target: Experiment['target'];
      if ('neuron_id' in body.target) {
        const n = await d.neurons.resolve(bscope, body.target.neuron_id);
        const v = body.target.version ?? n.version;
        await d.neurons.snapshot(bscope, n._id, v);
        target = { kind: 'neuron', id: n._id, version: v };
      } else {
        const p = await d.pathways.getForChildRun(bscope, body.target.pathway_id, body.target.version);
        target = { kind: 'pathway', id: p.pathway._id, version: p.version };
      }
      const evaluators = await specsOf(d, bscope, body.evaluators);
      const now = new Date();
      const doc: Experiment = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId: ds.brainId,
        name: body.name ?? null,
        datasetId: ds._id,
        datasetVersion: version,
        target,
        evaluators,
        concurrency: body.concurrency,
        status: 'pending',
        itemCount: count,
        currentStep: 'starting',
        failedReason: null,
        aggregates: null,
        scope: toRunScope(bscope),
        createdBy: scope.userId,
        createdAt: now,
        updatedAt: now,
        finishedAt: null,
      };
      await store.createExperiment(doc);
      const input: ExperimentRunInput = { workspaceId: doc.workspaceId, experimentId: doc._id };
      try {
        await d.temporal.workflow.start(EXPERIMENT_WORKFLOW, {
          taskQueue: d.taskQueue,
          workflowId: experimentWorkflowId(doc._id),
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [
            { key: WorkspaceIdKey, value: doc.workspaceId },
            { key: BrainIdKey, value: doc.brainId },
            { key: JobKindKey, value: 'experiment' },
          ],
          staticSummary: `experiment ${doc.name ?? doc._id} · ${count} items of dataset ${ds.name} v${version}`,
        });
      } catch (e) {
        d.log.warn({ experimentId: doc._id, err: (e as Error).message }, 'experiment workflow start failed');
        await store.setExperiment(doc.workspaceId, doc._id, {
          status: 'failed',
          failedReason: 'the workflow could not be started',
          finishedAt: new Date(),
        });
        throw new AppError('SERVICE_UNAVAILABLE', 503, 'The experiment could not be started; retry', {
          'Retry-After': '1',
        });
      }
      return doc;
    },
    listExperiments: (scope: Scope, q: PageQuery & { dataset_id?: string }) =>
      store.pageExperiments(
        scope.workspaceId,
        { ...(scope.brainId ? { brainId: scope.brainId } : {}), ...(q.dataset_id ? { datasetId: q.dataset_id } : {}) },
        q,
      ),
    /** Removes an ended experiment and its per-item results (409 while it runs: cancel it first); its runs' jobs stay. */
    async removeExperiment(scope: Scope, id: string): Promise<void> {
      const e = await experiment(d, scope, id);
      if (!EXPERIMENT_TERMINAL.includes(e.status))
        throw conflict(`the experiment is ${e.status}: cancel it before deleting it`);
      if (!(await store.removeExperiment(scope.workspaceId, id))) throw notFound('Experiment');
    },
    /** Cancels a running experiment: its workflow is cancelled (its child runs with it); an ended one is a 409. */
    async cancelExperiment(scope: Scope, id: string): Promise<Experiment> {
      const e = await experiment(d, scope, id);
      if (EXPERIMENT_TERMINAL.includes(e.status)) throw conflict(`the experiment is ${e.status}`);
      try {
        await d.temporal.workflow.getHandle(experimentWorkflowId(id)).cancel();
      } catch (err) {
        if ((err as { name?: string }).name !== 'WorkflowNotFoundError') throw err;
      }
      await store.setExperiment(scope.workspaceId, id, {
        status: 'cancelled',
        currentStep: 'cancelled',
        finishedAt: new Date(),
      });
      return experiment(d, scope, id);
    },
  };
}

/** An experiment's results: its progress and aggregates, its item rows, and comparisons. */
function createExperimentResults(d: EvaluationDeps) {
  const { store } = d;
  return {
    /** The experiment with its progress (items ended) and aggregates (so far while it runs). */
    async getExperiment(scope: Scope, id: string) {
      const e = await experiment(d, scope, id);
      const rows = await store.experimentItems(scope.workspaceId, id);
      const done = rows.filter((r) => r.status !== 'running').length;
      const aggregates =
        EXPERIMENT_TERMINAL.includes(e.status) && e.aggregates ? e.aggregates : rows.length ? figures(e, rows) : null;
      return { experiment: e, done, aggregates };
    },
    async listExperimentItems(scope: Scope, id: string, q: PageQuery) {
      await experiment(d, scope, id);
      const p = await store.pageExperimentItems(scope.workspaceId, id, q);
      const items = await store.getItems(
        scope.workspaceId,
        p.items.map((r) => r.itemId),
      );
      const byId = new Map(items.map((it) => [it._id, it]));
      return { ...p, items: p.items.map((r) => ({ run: r, item: byId.get(r.itemId) ?? null })) };
    },
    /**
     * Two to five experiments item by item (items matched by dataset item id; the first experiment
     * is the baseline): each one's output, scores and pass, and what changed against the baseline.
     */
    async compare(scope: Scope, ids: string[]) {
      const exps = await Promise.all(ids.map((id) => experiment(d, scope, id)));
      const rows = await Promise.all(exps.map((e) => store.experimentItems(scope.workspaceId, e._id)));
      // Items in dataset order, each once (experiments on other versions may have items the others lack).
      const order = [
        ...new Set(
          rows
            .flat()
            .sort((a, b) => a.seq - b.seq)
            .map((r) => r.itemId),
        ),
      ];
      const items = new Map((await store.getItems(scope.workspaceId, order)).map((it) => [it._id, it]));
      const maps = rows.map((rs) => new Map(rs.map((r) => [r.itemId, r])));
      const scoresOf = (r: ExperimentItem | undefined) => new Map((r?.scores ?? []).map((s) => [s.evaluator, s.score]));
      return {
        experiments: exps,
        items: order.map((itemId) => {
          const runs = maps.map((m) => m.get(itemId));
          const base = runs[0];
          const baseScores = scoresOf(base);
          const deltas = runs.slice(1).map((r) => {
            const out: Record<string, number> = {};
            for (const [name, s] of scoresOf(r)) {
              const b = baseScores.get(name);
              if (b !== undefined)
                Object.defineProperty(out, name, { value: Math.round((s - b) * 1e6) / 1e6, enumerable: true });
            }
            return out;
          });
          const it = items.get(itemId) ?? null;
          return {
            itemId,
            item: it,
            runs,
            changed: {
              output: runs.slice(1).some((r) => textOf(r?.output) !== textOf(base?.output)),
              passed: runs.slice(1).some((r) => (r?.passed ?? false) !== (base?.passed ?? false)),
              scoreDeltas: deltas,
            },
          };
        }),
      };
    },
  };
}

/** The experiment workflow's first steps (activities): its plan, and each item's child runs. */
function createExperimentRunSteps(d: EvaluationDeps) {
  const { store } = d;
  return {
    /** Marks the experiment running and answers its plan; an ended experiment answers no items. */
    async begin(ref: ExperimentRunInput): Promise<ExperimentPlan> {
      const e = await store.getExperiment(ref.workspaceId, ref.experimentId);
      if (!e || EXPERIMENT_TERMINAL.includes(e.status))
        return { itemIds: [], concurrency: 1, jobEvaluators: [], ended: [] };
      await store.setExperiment(e.workspaceId, e._id, { status: 'running', currentStep: 'running items' });
      const [itemIds, rows] = await Promise.all([
        store.itemIdsAt(e.workspaceId, e.datasetId, e.datasetVersion, EVAL_LIMITS.experimentItems),
        store.experimentItems(e.workspaceId, e._id),
      ]);
      return {
        itemIds,
        concurrency: e.concurrency,
        jobEvaluators: e.evaluators.filter((s) => s.type === 'judge' || s.type === 'pathway').map((s) => s.name),
        ended: rows.filter((r) => r.status !== 'running').map((r) => r.itemId),
      };
    },
    /**
     * Claims the item's run with the job id the workflow minted (a retry, or a re-run of the step,
     * finds the first claim's job) and answers the target's child run.
     */
    async prepareItem(ref: ExperimentRunInput, itemId: string, jobId: string): Promise<ChildRun> {
      const e = await store.getExperiment(ref.workspaceId, ref.experimentId);
      const item = await store.getItem(ref.workspaceId, itemId);
      if (!e || !item || item.datasetId !== e.datasetId) throw notFound('Experiment item');
      const row = await store.claimItem(newRow(e, item, jobId));
      const summary = `experiment ${e._id} · item ${item.seq + 1}`;
      return e.target.kind === 'neuron'
        ? childRun(
            d,
            e,
            row.jobId,
            { kind: 'neuron', neuronId: e.target.id, version: e.target.version, message: messageOf(item.input) },
            summary,
          )
        : childRun(
            d,
            e,
            row.jobId,
            { kind: 'pathway', pathwayId: e.target.id, version: e.target.version, input: pathwayInputOf(item.input) },
            summary,
          );
    },
    /** A job evaluator's child run for one item (judge: a neuron with the rubric; pathway: `{ input, expected, output }`). */
    async prepareEvaluator(
      ref: ExperimentRunInput,
      itemId: string,
      targetJobId: string,
      name: string,
      jobId: string,
    ): Promise<ChildRun> {
      const e = await store.getExperiment(ref.workspaceId, ref.experimentId);
      const item = await store.getItem(ref.workspaceId, itemId);
      const spec = e?.evaluators.find(
        (s): s is JobEvaluatorSpec => s.name === name && (s.type === 'judge' || s.type === 'pathway'),
      );
      if (!e || !item || !spec) throw notFound('Experiment evaluator');
      const job = await runRef(d, e.workspaceId, targetJobId);
      const c = { input: item.input, expected: item.expected, output: outputOfResult(job?.result) };
      const summary = `experiment ${e._id} · item ${item.seq + 1} · evaluator ${name}`;
      return spec.type === 'judge'
        ? childRun(
            d,
            e,
            jobId,
            { kind: 'neuron', neuronId: spec.neuronId, version: spec.version, message: judgeMessage(spec.rubric, c) },
            summary,
          )
        : childRun(
            d,
            e,
            jobId,
            {
              kind: 'pathway',
              pathwayId: spec.pathwayId,
              version: spec.version,
              input: { input: c.input, expected: c.expected ?? null, output: c.output },
            },
            summary,
          );
    },
  };
}

/** The experiment workflow's last steps (activities): an item's scores, the experiment's end, its current step. */
function createExperimentScoring(d: EvaluationDeps) {
  const { store } = d;
  return {
    /**
     * Scores one item and records it once: the target's output, every evaluator's verdict, the
     * run's latency (its job's start to end), tokens and cost summed from the usage ledger rows of
     * its job (and, for the evaluator cost, of the evaluators' jobs).
     */
    async scoreItem(o: ItemOutcome): Promise<void> {
      const e = await store.getExperiment(o.ref.workspaceId, o.ref.experimentId);
      const item = await store.getItem(o.ref.workspaceId, o.itemId);
      if (!e || !item) return;
      const job = await runRef(d, e.workspaceId, o.jobId);
      const output = o.failed ? null : outputOfResult(job?.result);
      const whole = e.target.kind === 'pathway';
      const t = await d.usage.jobTotals(e.workspaceId, o.jobId, whole);
      const scores: ItemScore[] = [];
      let evalCost = 0;
      for (const spec of e.evaluators) {
        if (o.failed) {
          scores.push(scored(spec, { score: 0, reason: `the run failed: ${o.failed}` }));
          continue;
        }
        if (spec.type !== 'judge' && spec.type !== 'pathway') {
          scores.push(
            scored(spec, scoreBuiltin(spec as BuiltinSpec, { input: item.input, expected: item.expected, output })),
          );
          continue;
        }
        const ej = o.evaluatorJobs.find((x) => x.name === spec.name);
        if (!ej) {
          scores.push(scored(spec, { score: 0, reason: 'the evaluator did not run' }));
          continue;
        }
        const ev = await runRef(d, e.workspaceId, ej.jobId);
        evalCost += (await d.usage.jobTotals(e.workspaceId, ej.jobId, spec.type === 'pathway')).costUsd;
        const v = ej.failed
          ? { score: 0, reason: `the evaluator's run failed: ${ej.failed}` }
          : spec.type === 'judge'
            ? judgeVerdict(outputOfResult(ev?.result))
            : pathwayVerdict(outputOfResult(ev?.result));
        scores.push(scored(spec, v, ej.jobId));
      }
      const started = job?.createdAt.getTime();
      const ended = (job?.finishedAt ?? job?.updatedAt)?.getTime();
      await store.finishItem(e.workspaceId, rowId(e._id, o.itemId), {
        status: o.failed ? 'failed' : 'scored',
        output,
        error: o.failed,
        scores,
        passed: !o.failed && scores.every((s) => s.passed),
        latencyMs: started !== undefined && ended !== undefined ? Math.max(0, ended - started) : null,
        inputTokens: t.inputTokens,
        outputTokens: t.outputTokens,
        totalTokens: t.totalTokens,
        costUsd: t.costUsd,
        evaluatorCostUsd: evalCost,
        finishedAt: new Date(),
      });
    },
    /** Ends the experiment: its aggregates from the item rows, its status, and its webhook event (recorded in the outbox). */
    async finish(
      ref: ExperimentRunInput,
      outcome: 'completed' | 'failed' | 'cancelled',
      reason: string | null,
    ): Promise<void> {
      const e = await store.getExperiment(ref.workspaceId, ref.experimentId);
      if (!e) return;
      const aggregates = figures(e, await store.experimentItems(e.workspaceId, e._id));
      await store.setAggregates(e.workspaceId, e._id, aggregates);
      const moved = await store.setExperiment(e.workspaceId, e._id, {
        status: outcome,
        currentStep: outcome,
        failedReason: reason,
        finishedAt: new Date(),
      });
      // Announced by the step that ended it (a retried step finds the event recorded by its key);
      // an experiment cancelled meanwhile stays cancelled and sends nothing.
      const now = moved ? outcome : (await store.getExperiment(e.workspaceId, e._id))?.status;
      if (now === 'completed' || now === 'failed') await announce(d, { ...e, aggregates }, now, reason);
    },
    /** The workflow's current step, shown by GET /v1/experiments/:id. */
    step: async (ref: ExperimentRunInput, currentStep: string): Promise<void> =>
      void (await store.setExperiment(ref.workspaceId, ref.experimentId, { currentStep })),
  };
}

/**
 * Datasets, evaluators and experiments (docs/evaluations.md). Datasets and experiments belong to
 * a brain of the caller's workspace; an experiment is the durable workflow `experimentRun`, which
 * runs each item as a child job of the target and scores it with every evaluator.
 */
export function createEvaluationService(d: EvaluationDeps) {
  return {
    ...createDatasetMethods(d), // createDataset, listDatasets, getDataset, …, importItems, addFromJob
    ...createExperimentMethods(d), // createExperiment, listExperiments, removeExperiment, cancelExperiment
    ...createExperimentResults(d), // getExperiment, listExperimentItems, compare
    ...createExperimentRunSteps(d), // begin, prepareItem, prepareEvaluator
    ...createExperimentScoring(d), // scoreItem, finish, step
  };
}

const rowId = (experimentId: string, itemId: string) => uuidFromName(`experiment-item:${experimentId}:${itemId}`);

const newRow = (e: Experiment, item: DatasetItem, jobId: string): ExperimentItem => ({
  _id: rowId(e._id, item._id),
  workspaceId: e.workspaceId,
  experimentId: e._id,
  itemId: item._id,
  seq: item.seq,
  jobId,
  status: 'running',
  output: null,
  error: null,
  scores: [],
  passed: false,
  latencyMs: null,
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  costUsd: 0,
  evaluatorCostUsd: 0,
  createdAt: new Date(),
  finishedAt: null,
});

/** Why the linear engine refuses a pattern, or null. */
function regexRefusal(pattern: string, flags: string): string | null {
  const v = scoreBuiltin(
    { type: 'regex', name: 'r', passThreshold: 1, pattern, flags },
    { input: null, expected: null, output: '' },
  );
  return v.score === 0 && /not supported|too large/.test(v.reason) ? v.reason : null;
}
