import { createHash, randomUUID } from 'node:crypto';
import { evaluateTimeboxed, templateParts } from '../expressions/index.js';
import type { Config } from '../kernel/config.js';
import type { Bus } from '../kernel/events.js';
import { AppError, conflict, forbidden, validationError } from '../kernel/errors.js';
import { costOf } from '../llm/pricing.js';
import { estimateTokens, type ChatMessage } from '../llm/types.js';
import type { ModelRegistry } from '../llm/registry.js';
import { compileGraph } from './compile.js';
import { MAP_MAX_ITEMS } from './walk.js';
import type { PathwayTrailStore } from './store.js';
import type { ExecuteBody, JobCreateBody, JobInputBody, ReplayBody, ResumeBody } from './run-schemas.js';
import type { Scope } from '../kernel/scope.js';
import type {
  BudgetPause,
  InterventionAnswer,
  PathwayReplay,
  PathwayRunInput,
  PathwayRunResult,
  RecordedVisit,
  RunGraph,
  RunScope,
} from '../temporal/definitions.js';
import type { InterventionService } from '../interventions/index.js';
import type { JobPatch, JobService } from '../jobs/index.js';
import type { NeuronService } from '../neurons/index.js';
import type { PathwayService } from './service.js';
import { fromRunScope, toRunScope } from '../runs/index.js';
import type { TraceService } from '../traces/index.js';
import type { UsageService } from '../usage/index.js';
import type { BudgetService } from '../usage/index.js';

const MAX_PATHWAY_STEPS = 1000;

/** Evaluates a JSONata expression over the run state (safe: no eval, no globals; time-boxed: src/expressions/engine.ts). A failure is a 4xx: the node fails without retries. */
export async function evaluateExpression(expression: string, context: Record<string, unknown>): Promise<unknown> {
  if (!expression.trim()) return context.last;
  try {
    return await evaluateTimeboxed(expression, context);
  } catch (e) {
    throw validationError(`expression "${expression}" failed: ${(e as { message?: string }).message ?? 'invalid'}`);
  }
}

/** Renders `{{ expression }}` placeholders with JSONata; without a template the current value is the text. */
export async function renderTemplate(template: string | undefined, context: Record<string, unknown>): Promise<string> {
  const asText = (v: unknown) => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
  if (template === undefined) return asText(context.last);
  const out = await Promise.all(
    templateParts(template).map(async (p) =>
      'text' in p ? p.text : asText(await evaluateExpression(p.expression, context)),
    ),
  );
  return out.join('');
}

/**
 * Renders every string leaf of a JSON value as a template (an `http` body: every leaf becomes
 * text). With `keepTypes` (a tree-shaped `input`), a leaf that is one placeholder and nothing else
 * (`"{{ item.n }}"`) is that expression's value, of its own type (a number stays a number).
 */
export async function renderTree(
  value: unknown,
  context: Record<string, unknown>,
  keepTypes = false,
): Promise<unknown> {
  if (typeof value === 'string') {
    const parts = templateParts(value);
    const only = parts.length === 1 ? parts[0] : null;
    if (keepTypes && only && 'expression' in only) return evaluateExpression(only.expression, context);
    return renderTemplate(value, context);
  }
  if (Array.isArray(value)) return Promise.all(value.map((v) => renderTree(v, context, keepTypes)));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      await Promise.all(
        Object.entries(value).map(async ([k, v]) => [k, await renderTree(v, context, keepTypes)] as const),
      ),
    );
  return value;
}

/**
 * A `pathway` or `map` node's `input` (docs/pathways.md): an expression string is evaluated (empty:
 * `fallback`), an object or array has its string leaves rendered as templates (a leaf that is one
 * placeholder keeps its value's type).
 */
async function renderInput(input: unknown, context: Record<string, unknown>, fallback: unknown): Promise<unknown> {
  if (typeof input === 'string') return input.trim() ? evaluateExpression(input, context) : fallback;
  if (typeof input === 'object' && input !== null) return renderTree(input, context, true);
  return fallback;
}

/** Picks one category from a model reply: exact match first, then a single contained name. */
function matchCategory(reply: string, categories: string[]): string | null {
  const r = reply
    .trim()
    .replace(/^["'`]|["'`.]$/g, '')
    .toLowerCase();
  const exact = categories.find((c) => c.toLowerCase() === r);
  if (exact) return exact;
  const contained = categories.filter((c) =>
    new RegExp(`\\b${c.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`).test(r),
  );
  return contained.length === 1 ? contained[0] : null;
}

/** What the pathway-run service is built from (src/compose/services.ts passes it). */
export interface PathwayRunDeps {
  config: Config;
  bus: Bus;
  jobs: JobService;
  /** The node visits each run recorded when it ended (replays take them). */
  trails: PathwayTrailStore;
  traces: TraceService;
  neurons: NeuronService;
  pathways: PathwayService;
  interventions: InterventionService;
  models: ModelRegistry;
  usage: UsageService;
  budgets: BudgetService;
}

type Deps = PathwayRunDeps;

/** A run to start: the graph (compiled at start), where it comes from, its input and its trace. */
interface StartArgs {
  graph: unknown;
  pathwayId: string | null;
  version: number | null;
  input: Record<string, unknown>;
  traceId?: string;
  brainId: string | null;
  name: string;
  /** A replay: the run it replays, the node it runs from, that run's visits and the input for that node. */
  replay?: { of: string; fromNode: string; trail: RecordedVisit[]; input?: Record<string, unknown> };
}

/** A classify node's call, as the activity passes it. */
interface ClassifyCall {
  scope: RunScope;
  jobId: string;
  categories: string[];
  text: string;
  neuronId?: string;
  model?: string;
  attempt?: number;
  approvedBudgets?: string[];
}

/** What a human node (or a budget pause) opens, as the workflow asks for it. */
interface InterventionSpec {
  id: string;
  nodeIndex: number;
  /** The designer's node id (absent from runs started before ids were kept). */
  nodeId?: string;
  /** The run's data: the title and prompt are templates over it (absent from runs started before). */
  context?: Record<string, unknown>;
  kind: 'approval' | 'pause' | 'budget';
  options: string[];
  expiresInS?: number;
  title: string;
  prompt: string;
  progress: number;
  currentStep: string;
}

/** Pathway runs: start (execute and POST /v1/jobs), the interpreter's I/O steps, and human input. */
export function createPathwayRunService(deps: PathwayRunDeps) {
  const d: Deps = deps;
  return {
    /** Compiles the graph (400 when invalid) and pins the version of every neuron a node runs, as a neuron invoke pins its own. */
    runInput: (scope: Scope, args: StartArgs, jobId: string) => runInput(d, scope, args, jobId),
    /** POST /v1/pathways/:id/execute (brain header required; pinned or head version). */
    /** POST /v1/pathways/:id/execute: the pathway by id or slug (PathwayService.resolveId). */
    execute: (scope: Scope, ref: string, body: ExecuteBody) => execute(d, scope, ref, body),
    /** POST /v1/jobs: a stored pathway (pathway_id) or an inline graph, with input or data. */
    createJob: (scope: Scope, body: JobCreateBody) => createJob(d, scope, body),
    startRun: (input: PathwayRunInput) => startRun(d, input),
    nodeEvent: (jobId: string, event: Record<string, unknown>, p: JobPatch | null) => nodeEvent(d, jobId, event, p),
    /**
     * A classify node's model call. Budgets are checked before it as before a neuron's model turn
     * (docs/usage.md): the fail policy fails the node with BUDGET_EXCEEDED; the pause policy
     * returns the budget instead of a category, and the run asks an admin before calling again.
     */
    classify: (a: ClassifyCall): Promise<string | { budget: BudgetPause }> => classify(d, a),
    /** Creates the intervention and sets the job waiting (or paused) with waitingFor naming it. */
    openIntervention: (input: PathwayRunInput, spec: InterventionSpec) => openIntervention(d, input, spec),
    expireIntervention: (input: PathwayRunInput, id: string) =>
      d.interventions.close(input.scope.workspaceId, id, 'expired').then(() => undefined),
    /** Records an answer the run accepted: the intervention record and the job read model together. */
    recordAnswer: (input: PathwayRunInput, answer: InterventionAnswer, kind: InterventionSpec['kind']) =>
      recordAnswer(d, input, answer, kind),
    /** Completes the job; its result carries what the whole run cost, read from the usage ledger (docs/usage.md). */
    finishRun: (input: PathwayRunInput, run: PathwayRunResult, trail?: RecordedVisit[]) =>
      finishRun(d, input, run, trail),
    failRun: (input: PathwayRunInput, reason: string, trail?: RecordedVisit[]) => failRun(d, input, reason, trail),
    /** A pathway or map node's child run: compiled, pinned, its job recorded under the parent job. */
    prepareSubPathway: (c: SubPathwayCall) => prepareSubPathway(d, c),
    neuronVersion: async (scope: RunScope, neuronId: string) =>
      (await d.neurons.resolve(fromRunScope(scope), neuronId)).version,
    /**
     * POST /v1/jobs/:id/replay: a new run of the ended run's pathway version that takes the values
     * the run recorded for every node visit before its first visit of `from_node` (those nodes do
     * not run again), then runs from that node (`input`, when given, flowing into it in place of
     * its recorded input). 404 for a job the caller cannot see, 409 for a run that has not ended.
     */
    replay: (scope: Scope, jobId: string, body: ReplayBody) => replay(d, scope, jobId, body),
    /** POST /v1/jobs/:id/input: the input must answer the intervention the run is paused on. */
    input: (scope: Scope, jobId: string, body: JobInputBody) => input(d, scope, jobId, body),
    /** POST /v1/jobs/:id/resume: continues a paused run; a waiting approval needs an action. */
    resume: (scope: Scope, jobId: string, body: ResumeBody) => resume(d, scope, jobId, body),
  };
}
export type PathwayRunService = ReturnType<typeof createPathwayRunService>;

async function runInput(d: Deps, scope: Scope, args: StartArgs, jobId: string): Promise<PathwayRunInput> {
  const [neuronIds, pathwayIds] = await Promise.all([d.pathways.neuronIdsFor(scope), d.pathways.pathwayIdsFor(scope)]);
  const { compiled, errors } = compileGraph(args.graph, { neuronIds, pathwayIds, selfPathwayId: args.pathwayId });
  if (errors.length) throw validationError(`pathway graph is invalid: ${errors.slice(0, 3).join('; ')}`);
  const neuronVersions: Record<string, number> = {};
  const pathwayVersions: Record<string, number> = {};
  await Promise.all(
    (compiled as RunGraph).nodes.map(async (n, i) => {
      const runsNeuron = n.type === 'neuron' || n.type === 'map';
      if (runsNeuron && typeof n.data.neuron_id === 'string')
        neuronVersions[String(i)] = (await d.neurons.resolve(scope, n.data.neuron_id)).version;
      // A sub-pathway runs the version the node names, else the head as it is now (later saves do not change this run).
      const runsPathway = n.type === 'pathway' || n.type === 'map';
      if (runsPathway && typeof n.data.pathway_id === 'string')
        pathwayVersions[String(i)] =
          typeof n.data.version === 'number'
            ? n.data.version
            : (await d.pathways.getForChildRun(scope, n.data.pathway_id)).version;
    }),
  );
  return {
    jobId,
    scope: toRunScope(scope),
    pathwayId: args.pathwayId,
    pathwayVersion: args.version,
    traceId: args.traceId ?? randomUUID(),
    input: args.input,
    graph: compiled as RunGraph,
    maxSteps: MAX_PATHWAY_STEPS,
    neuronVersions,
    ...(Object.keys(pathwayVersions).length ? { pathwayVersions } : {}),
  };
}

/** What a pathway or map node asks for its child run (the parent's part is what the child inherits). */
export interface SubPathwayCall {
  parent: Pick<PathwayRunInput, 'jobId' | 'scope' | 'traceId' | 'depth' | 'rootJobId' | 'traceChain'>;
  /** The child's job id (its workflow id), minted by the parent workflow. */
  jobId: string;
  pathwayId: string;
  /** The pinned version; absent (runs started before pins): the head. */
  version?: number;
  input: Record<string, unknown>;
}

/**
 * A sub-pathway's run: the pathway at its version compiled as a run of its own (its neurons and
 * pathways pinned now), and its job recorded as the parent job's child on the parent's trace.
 * Idempotent: a retried call finds the job it recorded.
 */
async function prepareSubPathway(d: Deps, c: SubPathwayCall): Promise<PathwayRunInput> {
  const parentScope = fromRunScope(c.parent.scope);
  const run = await d.pathways.getForChildRun(parentScope, c.pathwayId, c.version);
  const scope: Scope = { ...parentScope, brainId: run.pathway.brainId };
  const input = await runInput(
    d,
    scope,
    {
      graph: run.graph,
      pathwayId: c.pathwayId,
      version: run.version,
      input: c.input,
      traceId: c.parent.traceId,
      brainId: run.pathway.brainId,
      name: run.pathway.name,
    },
    c.jobId,
  );
  await d.jobs.create(scope, {
    id: c.jobId,
    kind: 'pathway',
    pathwayId: c.pathwayId,
    traceId: input.traceId,
    brainId: run.pathway.brainId,
    parentJobId: c.parent.jobId,
    pathwayVersion: run.version,
    input: c.input,
  });
  return {
    ...input,
    depth: (c.parent.depth ?? 0) + 1,
    parentJobId: c.parent.jobId,
    rootJobId: c.parent.rootJobId ?? c.parent.jobId,
    ...(c.parent.traceChain ? { traceChain: true } : {}),
  };
}

/** A map node's items and what each item's child run gets, rendered in one call. */
export interface MapItemsCall {
  /** The expression over the context that yields the items. */
  items: string;
  /** Map over a neuron: the message template per item (default `{{ item }}`). */
  message?: string;
  /** Map over a pathway: the input per item, an expression or a tree of templates (default the item). */
  input?: unknown;
  kind: 'neuron' | 'pathway';
  context: Record<string, unknown>;
}

/** A value as a pathway run's input: an object as it is, anything else as `{ value }`. */
const asRunInput = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };

/**
 * Evaluates a map node's `items` (an array, at most MAP_MAX_ITEMS, else a 4xx: the node fails
 * without retries), then for each item, with `item` and `index` in the context, the neuron's
 * message or the pathway's input.
 */
export async function mapItems(c: MapItemsCall): Promise<unknown[]> {
  const items = await evaluateExpression(c.items, c.context);
  if (!Array.isArray(items)) {
    const got = items === undefined ? 'nothing' : items === null ? 'null' : `a ${typeof items}`;
    throw validationError(`map: data.items "${c.items}" must yield an array; it yielded ${got}`);
  }
  if (items.length > MAP_MAX_ITEMS)
    throw validationError(`map: data.items yielded ${items.length} items; a map runs at most ${MAP_MAX_ITEMS}`);
  const out: unknown[] = [];
  for (const [index, item] of items.entries()) {
    const context = { ...c.context, item, index };
    if (c.kind === 'neuron') out.push(await renderTemplate(c.message ?? '{{ item }}', context));
    else out.push(asRunInput(await renderInput(c.input, context, item)));
  }
  return out;
}

async function start(d: Deps, scope: Scope, args: StartArgs) {
  // The workspace's share of runs (429 past it, nothing stored; once stored, the job counts itself),
  // counted while the run's input is prepared (one round trip on the path to the 202, not two).
  const [admission, prepared] = await Promise.allSettled([
    d.jobs.admitRun(scope.workspaceId),
    runInput(d, scope, args, randomUUID()).then((i) =>
      args.replay ? { ...i, replay: replayInput(i.graph, args.replay) } : i,
    ),
  ]);
  if (prepared.status === 'rejected') {
    if (admission.status === 'fulfilled') admission.value.release();
    throw prepared.reason;
  }
  if (admission.status === 'rejected') throw admission.reason;
  const admitted = admission.value;
  const input = prepared.value;
  // A run on a trace the caller named takes its place in the trace's chain of runs (double-texting,
  // docs/neurons.md): it waits for the trace's run that has not ended, and a run after it waits for it.
  const claimed = await (
    args.traceId ? d.jobs.claimTrace(scope, input.traceId, input.jobId, 'enqueue') : Promise.resolve(null)
  ).catch((e: unknown) => {
    admitted.release();
    throw e;
  });
  const waitsFor = claimed?.waitsFor ?? null;
  // Its neurons' writes into the trace are made under the run's lease (src/runs/trace-writes.ts).
  if (claimed) input.traceChain = true;
  const { job } = await d.jobs
    .create(scope, {
      id: input.jobId,
      kind: 'pathway',
      pathwayId: args.pathwayId,
      traceId: input.traceId,
      brainId: args.brainId,
      pathwayVersion: args.version,
      input: args.input,
      queued: admitted.queued || waitsFor !== null,
      waitsFor,
      ...(claimed ? { onTraceChain: true } : {}),
      ...(args.replay ? { replay: { of: args.replay.of, fromNode: args.replay.fromNode } } : {}),
    })
    .catch(async (e: unknown) => {
      if (claimed) await d.jobs.giveUpTrace(scope.workspaceId, input.jobId, waitsFor).catch(() => undefined);
      throw e;
    })
    .finally(admitted.release);
  await d.jobs.emit(input.jobId, { type: 'status', status: 'pending' });
  await d.jobs.startWorkflow(
    job,
    'pathwayRun',
    [input],
    `pathway ${args.name}${args.version ? ` v${args.version}` : ''} · ${input.graph.nodes.length} nodes`,
  );
  return job;
}

/**
 * A replay's part of its run input: the visits before the first visit of `fromNode` in the
 * replayed run's trail. 400 naming from_node when the graph has no such node or the run never
 * reached it (there is nothing recorded to stand on).
 */
function replayInput(graph: RunGraph, r: NonNullable<StartArgs['replay']>): PathwayReplay {
  const from = graph.nodes.findIndex((n, i) => (n.id ?? String(i)) === r.fromNode);
  if (from < 0) throw validationError(`from_node: the pathway has no node "${r.fromNode}"`);
  const first = r.trail.findIndex((v) => v.at === from);
  if (first < 0) throw validationError(`from_node: job ${r.of} never reached node "${r.fromNode}"`);
  return {
    of: r.of,
    fromNode: r.fromNode,
    // A visit that had not ended (a parallel branch's node cut short) has no value to take: it runs again.
    recorded: r.trail.slice(0, first).filter((v) => !v.pending),
    ...(r.input ? { input: r.input } : {}),
  };
}

async function replay(d: Deps, scope: Scope, jobId: string, body: ReplayBody) {
  d.jobs.refuseIfFull(scope.workspaceId);
  const job = await d.jobs.get(scope, jobId);
  if (job.kind !== 'pathway') throw validationError(`job ${jobId} is a ${job.kind} job; only pathway runs replay`);
  if (job.status !== 'completed' && job.status !== 'failed')
    throw conflict(`job ${jobId} is ${job.status}; only a run that has ended can be replayed`);
  if (!job.pathwayId || job.pathwayVersion == null)
    throw validationError(`job ${jobId} ran an inline graph; only runs of a stored pathway can be replayed`);
  const trail = await d.trails.get(scope.workspaceId, jobId);
  if (!trail) throw conflict(`job ${jobId} recorded no node values (it ended before replays were recorded)`);
  // The run's own brain, unless the caller names one (another brain's pathway is then not found).
  const runScope: Scope = { ...scope, brainId: scope.brainId ?? job.brainId ?? undefined };
  const run = await d.pathways.getForRun(runScope, job.pathwayId, job.pathwayVersion);
  return start(d, runScope, {
    graph: run.graph,
    pathwayId: job.pathwayId,
    version: run.version,
    input: asRunInput(job.input ?? {}),
    brainId: run.pathway.brainId,
    name: run.pathway.name,
    replay: { of: jobId, fromNode: body.from_node, trail, ...(body.input ? { input: body.input } : {}) },
  });
}

async function checkTrace(d: Deps, scope: Scope, traceId: string | undefined) {
  if (traceId) {
    const t = await d.traces.get(scope, traceId);
    if (t.traceType !== 'thread') throw validationError('trace_id must be a thread trace');
  }
}

async function patch(d: Deps, workspaceId: string, jobId: string, p: JobPatch) {
  await d.jobs.transition(workspaceId, jobId, p);
}

async function execute(d: Deps, scope: Scope, ref: string, body: ExecuteBody) {
  // A workspace found at its share of runs a moment ago is refused before any read.
  d.jobs.refuseIfFull(scope.workspaceId);
  const pathwayId = await d.pathways.resolveId(scope, ref);
  const run = await d.pathways.getForRun(scope, pathwayId, body.pathway_version);
  await checkTrace(d, scope, body.trace_id);
  return start(d, scope, {
    graph: run.graph,
    pathwayId,
    version: run.version,
    input: body.input ?? {},
    traceId: body.trace_id,
    brainId: run.pathway.brainId,
    name: run.pathway.name,
  });
}

async function createJob(d: Deps, scope: Scope, body: JobCreateBody) {
  d.jobs.refuseIfFull(scope.workspaceId);
  const input = { ...(body.data ?? {}), ...(body.input ?? {}) };
  await checkTrace(d, scope, body.trace_id);
  if (body.pathway_id) {
    const run = await d.pathways.getForRun(scope, body.pathway_id, body.pathway_version);
    return start(d, scope, {
      graph: run.graph,
      pathwayId: body.pathway_id,
      version: run.version,
      input,
      traceId: body.trace_id,
      brainId: run.pathway.brainId,
      name: run.pathway.name,
    });
  }
  return start(d, scope, {
    graph: body.pathway,
    pathwayId: null,
    version: null,
    input,
    traceId: body.trace_id,
    brainId: scope.brainId ?? null,
    name: 'inline',
  });
}

async function startRun(d: Deps, input: PathwayRunInput) {
  await patch(d, input.scope.workspaceId, input.jobId, { status: 'running', progress: 0, currentStep: 'starting' });
  await d.jobs.emit(input.jobId, { type: 'status', status: 'running' });
  await d.traces.publish(fromRunScope(input.scope), input.traceId, {
    type: 'run.started',
    job_id: input.jobId,
    pathway_id: input.pathwayId,
  });
}

async function nodeEvent(d: Deps, jobId: string, event: Record<string, unknown>, p: JobPatch | null) {
  await d.jobs.emit(jobId, event);
  if (p) {
    const job = await d.jobs.repoFind(jobId);
    if (job) await patch(d, job.workspaceId, jobId, p);
  }
}

async function classify(d: Deps, a: ClassifyCall): Promise<string | { budget: BudgetPause }> {
  const { m, messages } = await classifyPrompt(d, a);
  const promptTokens = estimateTokens(messages.map((x) => x.content).join(''));
  const over = await d.budgets.evaluate(
    await d.budgets.applicable(
      a.scope.workspaceId,
      { receptorId: a.scope.receptorId, neuronId: a.neuronId, shareTokenId: a.scope.shareTokenId },
      a.approvedBudgets,
    ),
    {
      tokens: promptTokens,
      costNanos: Math.round(costOf(m.id, { inputTokens: promptTokens, outputTokens: 0 }).costUsd * 1e9),
    },
  );
  if (over?.policy === 'fail') throw new AppError('BUDGET_EXCEEDED', 402, over.message);
  if (over) return { budget: { ...over } };
  const res = await m.provider.chat({ model: m.model, messages });
  await billClassify(d, a, m.id, res.usage);
  const category = matchCategory(res.text, a.categories);
  await d.jobs.emit(a.jobId, { type: 'classified', reply: res.text, category });
  if (!category)
    throw validationError(
      `classify: the model answered "${res.text.slice(0, 100)}", which is none of ${a.categories.join(', ')}`,
    );
  return category;
}

/** The classify call's model (the node's neuron's, its own, or the default) and its prompt. */
async function classifyPrompt(d: Deps, a: ClassifyCall) {
  let modelId = a.model ?? d.config.DEFAULT_MODEL;
  let system = '';
  if (a.neuronId) {
    const n = await d.neurons.resolve(fromRunScope(a.scope), a.neuronId);
    const head = d.neurons.headSnapshot(n);
    modelId = head.neuron_config.model ?? modelId;
    system = head.neuron_config.system_prompt ?? '';
  }
  const m = d.models.resolve(modelId);
  const messages: ChatMessage[] = [
    {
      role: 'system',
      content:
        `${system}\n\nClassify the user's input into exactly one of these categories: ${a.categories.join(', ')}. Answer with the category name only.`.trim(),
    },
    { role: 'user', content: a.text },
  ];
  return { m, messages };
}

/** The call is billed: one ledger row per attempt (a retried activity is another billed call). */
async function billClassify(
  d: Deps,
  a: ClassifyCall,
  modelId: string,
  usage: { inputTokens: number; outputTokens: number; totalTokens: number },
) {
  const job = await d.jobs.repoFind(a.jobId);
  const callKey = createHash('sha1')
    .update(`${a.categories.join('|')}\n${a.text}`)
    .digest('hex')
    .slice(0, 12);
  await d.usage.record({
    key: `${a.jobId}:classify:${callKey}:${a.attempt ?? 1}`,
    workspaceId: a.scope.workspaceId,
    kind: 'chat',
    modelId,
    usage,
    attribution: {
      brainId: job?.brainId ?? a.scope.brainId ?? null,
      userId: a.scope.userId,
      apiKeyId: a.scope.apiKeyId,
      jobId: a.jobId,
      traceId: job?.traceId ?? null,
      receptorId: a.scope.receptorId ?? null,
      neuronId: a.neuronId ?? null,
      pathwayId: job?.pathwayId ?? null,
      shareTokenId: a.scope.shareTokenId ?? null,
    },
  });
}

async function openIntervention(d: Deps, input: PathwayRunInput, spec: InterventionSpec) {
  const scope = fromRunScope(input.scope);
  const { progress, currentStep, nodeId, context, ...rest } = spec;
  const render = (text: string) => (context && text.includes('{{') ? renderTemplate(text, context) : text);
  const doc = await d.interventions.create(scope, {
    ...rest,
    title: await render(rest.title),
    prompt: await render(rest.prompt),
    jobId: input.jobId,
    traceId: input.traceId,
    pathwayId: input.pathwayId,
    brainId: scope.brainId ?? null,
  });
  const waitingFor = {
    type: 'intervention',
    interventionId: doc._id,
    kind: doc.kind,
    node: nodeId ?? spec.nodeIndex,
    title: doc.title,
    prompt: doc.prompt,
    options: doc.options,
    expires_at: doc.expiresAt?.toISOString() ?? null,
  };
  const status = spec.kind === 'pause' ? 'paused' : 'waiting';
  await patch(d, scope.workspaceId, input.jobId, { status, waitingFor, progress, currentStep });
  await d.jobs.emit(input.jobId, { type: status, intervention_id: doc._id, options: doc.options });
  await d.traces.publish(scope, input.traceId, {
    type: 'run.waiting',
    job_id: input.jobId,
    intervention_id: doc._id,
  });
  return waitingFor;
}

async function recordAnswer(
  d: Deps,
  input: PathwayRunInput,
  answer: InterventionAnswer,
  kind: InterventionSpec['kind'],
): Promise<string> {
  const doc = await d.interventions.recordAnswer(input.scope.workspaceId, answer, kind);
  await patch(d, input.scope.workspaceId, input.jobId, { status: 'running', waitingFor: null });
  // A person's answer is a learning signal receptors may subscribe to (once per intervention: the event id is its id).
  // Receptor fires start pathway runs, so they subscribe to the stimuli runs publish (not an import).
  await d.bus.emit('stimulus', {
    workspaceId: input.scope.workspaceId,
    key: 'plasticity.intervention.answered',
    eventId: `intervention:${doc._id}`,
    payload: { intervention_id: doc._id, job_id: input.jobId, action: answer.action, status: doc.status },
  });
  return doc.status;
}

async function finishRun(d: Deps, input: PathwayRunInput, run: PathwayRunResult, trail?: RecordedVisit[]) {
  if (trail) await d.trails.put(input.scope.workspaceId, input.jobId, trail);
  const { calls: _calls, ...usage } = await d.usage.jobTotals(input.scope.workspaceId, input.jobId, true);
  const result = { ...run, usage };
  await patch(d, input.scope.workspaceId, input.jobId, {
    status: 'completed',
    progress: 100,
    currentStep: 'completed',
    result,
    waitingFor: null,
  });
  await d.jobs.emit(input.jobId, { type: 'complete', result });
  await d.traces.publish(fromRunScope(input.scope), input.traceId, { type: 'run.completed', job_id: input.jobId });
}

async function failRun(d: Deps, input: PathwayRunInput, reason: string, trail?: RecordedVisit[]) {
  if (trail) await d.trails.put(input.scope.workspaceId, input.jobId, trail);
  await patch(d, input.scope.workspaceId, input.jobId, {
    status: 'failed',
    failedReason: reason,
    currentStep: 'failed',
    waitingFor: null,
  });
  await d.interventions.cancelForJob(input.scope.workspaceId, input.jobId);
  await d.jobs.emit(input.jobId, {
    type: 'error',
    error: reason.startsWith('cancelled') ? 'cancelled' : 'failed',
    message: reason,
  });
  await d.traces.publish(fromRunScope(input.scope), input.traceId, {
    type: 'run.failed',
    job_id: input.jobId,
    reason,
  });
}

/** The intervention a waiting or paused job names (its stored waitingFor). */
const waitingOf = (job: Awaited<ReturnType<JobService['get']>>) =>
  job.waitingFor as { interventionId?: string; kind?: string } | null;

async function input(d: Deps, scope: Scope, jobId: string, body: JobInputBody) {
  if (body.workspace_id && body.workspace_id !== scope.workspaceId)
    throw forbidden('workspace_id does not match the credential');
  const job = await d.jobs.get(scope, jobId);
  const waiting = waitingOf(job);
  if (job.status !== 'waiting' && job.status !== 'paused')
    throw validationError(`Job is ${job.status}, not waiting for input`);
  if (!waiting?.interventionId || waiting.interventionId !== body.input.interventionId)
    throw validationError('input does not match the intervention the job is waiting for');
  return d.interventions.respond(scope, body.input.interventionId, {
    action: body.input.action,
    comment: body.input.comment,
    fields: body.input.fields,
  });
}

async function resume(d: Deps, scope: Scope, jobId: string, body: ResumeBody) {
  const job = await d.jobs.get(scope, jobId);
  if (job.status !== 'waiting' && job.status !== 'paused')
    throw validationError(`Job is ${job.status}; only waiting or paused jobs can be resumed`);
  const waiting = waitingOf(job);
  if (!waiting?.interventionId) throw validationError('Job is not paused at an intervention');
  const action = body.action ?? (waiting.kind === 'pause' ? 'resume' : undefined);
  if (!action) throw validationError('This job waits for an approval: send action (for example approve or reject)');
  return d.interventions.respond(scope, waiting.interventionId, {
    action,
    comment: body.comment,
    fields: body.fields,
  });
}
