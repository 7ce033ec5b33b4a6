import { resolveFallbacks } from '../llm/registry.js';
import type { ChatMessage } from '../llm/types.js';
import type { ModelStep, ToolStep } from './model.js';
import type { NeuronSnapshot } from '../neurons/index.js';
import type { Scope } from '../kernel/scope.js';
import type { NeuronRunInput, PreparedRunData, RunScope, RunSummary } from '../temporal/definitions.js';
import {
  humanTurn,
  HISTORY_LIMIT,
  attributionOf,
  fromRunScope,
  summaryOf,
  type PreparedRun,
  type RunContext,
  type RunDeps,
} from './shared.js';
import { toolsetOf } from './toolset.js';
import { traceWriteGuard } from './trace-writes.js';
import { conflict } from '../kernel/errors.js';

/** A run's context: preparing it (activity path), loading it, marking the run started, and each turn's conversation. */
export const createContextSteps = (ctx: RunContext) => ({
  /** Activity path (child and pathway runs): records the job, stores the run context, marks it running. */
  prepare: (input: NeuronRunInput): Promise<RunSummary> => prepare(ctx, input),
  /**
   * A map item's preparation inside its one local activity (`runShort`): the job recorded as
   * already running and the context loaded, but not stored. The context is stored only if the
   * run goes on past its first turn (a run that ends there never reads it back).
   */
  prepareHeld: (input: NeuronRunInput): Promise<PreparedRunData> => prepareHeld(ctx, input),
  /** The job turns running: read model, job stream and a run-state event on the trace. */
  markStarted: (
    s: { scope: RunScope; traceId: string; neuronId: string; jobId: string },
    opts: { emitted?: boolean } = {},
  ): Promise<void> => markStarted(ctx.d, s, opts),
  /** Loads the pinned version, the trace history, tools and delegates (no writes). */
  load: (
    input: NeuronRunInput,
    message: string,
    data?: Record<string, unknown>,
    opts: { freshTrace?: boolean; head?: NeuronSnapshot } = {},
  ): Promise<PreparedRun> => load(ctx.d, input, message, data, opts),
});

async function prepare(ctx: RunContext, input: NeuronRunInput): Promise<RunSummary> {
  const { jobs, runLog } = ctx.d;
  const scope = fromRunScope(input.scope);
  // A run that waited behind another on its trace stores its human turn now (docs/neurons.md, "Double-texting").
  if (input.humanTurnOnStart) await appendHumanOnStart(ctx.d, input, input.humanTurnOnStart.brainId);
  // The job record and the context's reads go together: neither needs the other.
  const [, loaded] = await Promise.all([jobs.create(scope, childJob(input)), loadChild(ctx, input)]);
  // The context is stored once (a claim, no read first): a retried prepare runs on the first
  // attempt's context (the neuron, tools and history as they were then), read back only then.
  const prepared = (await runLog.putContext(scope.workspaceId, input.jobId, loaded))
    ? loaded
    : ((await runLog.context(input.jobId)) ?? loaded);
  await markStarted(
    ctx.d,
    { scope: input.scope, traceId: input.traceId, neuronId: input.neuronId, jobId: input.jobId },
    {},
  );
  return summaryOf(prepared);
}

/** The human turn of a run that waited for its trace (the same engram an invoke stores; its id makes a retry store it once). */
async function appendHumanOnStart(d: RunDeps, input: NeuronRunInput, brainId: string | null): Promise<void> {
  if (!input.userEngramId) return;
  const scope = fromRunScope(input.scope);
  // Written under the run's write lease: a run cancelled before it started writes nothing (a retry finds its turn).
  const guard = await traceWriteGuard(d.jobs, scope.workspaceId, input);
  if (!guard) {
    if (await d.traces.findEngram(scope, input.userEngramId)) return;
    throw conflict(`job ${input.jobId} has ended: it may no longer write into trace ${input.traceId}`);
  }
  const human = humanTurn(scope, input, {
    id: input.userEngramId,
    message: input.message ?? '',
    data: input.data,
    brainId,
  });
  await d.traces.append(scope, input.traceId, human, { guard });
}

async function prepareHeld(ctx: RunContext, input: NeuronRunInput): Promise<PreparedRunData> {
  const { jobs, traces } = ctx.d;
  const scope = fromRunScope(input.scope);
  const [{ created }, loaded] = await Promise.all([
    jobs.create(scope, { ...childJob(input), running: { progress: 5, currentStep: 'model turn 1' } }),
    loadChild(ctx, input),
  ]);
  // The job was recorded running by this call: its start is announced here, as markStarted does
  // for a job leaving pending. A retry (the job exists) is the transition markStarted makes once.
  if (created)
    await Promise.all([
      jobs.emit(input.jobId, { type: 'status', status: 'running' }),
      traces.publish(scope, input.traceId, { type: 'run.started', job_id: input.jobId, neuron_id: input.neuronId }),
    ]);
  else
    await markStarted(
      ctx.d,
      { scope: input.scope, traceId: input.traceId, neuronId: input.neuronId, jobId: input.jobId },
      {},
    );
  return loaded;
}

/** The job record of a run an activity prepares (a child run: a delegate, a pathway's neuron or map item). */
const childJob = (input: NeuronRunInput) => ({
  id: input.jobId,
  kind: 'neuron' as const,
  neuronId: input.neuronId,
  traceId: input.traceId,
  parentJobId: input.parentJobId ?? null,
  brainId: input.scope.brainId ?? null,
});

/** The context of a run an activity prepares; a retry whose neuron can no longer be read runs on the context stored the first time. */
function loadChild(ctx: RunContext, input: NeuronRunInput): Promise<PreparedRunData> {
  const brainId = fromRunScope(input.scope).brainId ?? null;
  return load(ctx.d, input, input.message ?? '', input.data, {}).then(
    (run): PreparedRunData => ({ ...run, attribution: attributionOf(input, brainId) }),
    async (e: unknown) => (await ctx.d.runLog.context(input.jobId)) ?? Promise.reject(e as Error),
  );
}

async function markStarted(
  d: RunDeps,
  s: { scope: RunScope; traceId: string; neuronId: string; jobId: string },
  opts: { emitted?: boolean },
): Promise<void> {
  const scope = fromRunScope(s.scope);
  const { previous } = await d.jobs.transitionFrom(scope.workspaceId, s.jobId, {
    status: 'running',
    progress: 5,
    currentStep: 'model turn 1',
  });
  if (previous?.status !== 'pending') return; // a retried turn: the run was marked running once already
  await Promise.all([
    opts.emitted ? null : d.jobs.emit(s.jobId, { type: 'status', status: 'running' }),
    d.traces.publish(scope, s.traceId, { type: 'run.started', job_id: s.jobId, neuron_id: s.neuronId }),
  ]);
}

async function load(
  d: RunDeps,
  input: NeuronRunInput,
  message: string,
  data: Record<string, unknown> | undefined,
  opts: { freshTrace?: boolean; head?: NeuronSnapshot },
): Promise<PreparedRun> {
  const scope = fromRunScope(input.scope);
  // `head`: the invoke has just read the neuron, and the run is pinned to its head version.
  const snap: NeuronSnapshot = opts.head ?? (await d.neurons.snapshot(scope, input.neuronId, input.neuronVersion));
  const cfg = snap.neuron_config;
  const modelId = d.models.resolve(cfg.model ?? d.config.DEFAULT_MODEL).id;
  const fallbackModels = resolveFallbacks(d.models, cfg.fallback_models);
  const isCompletion = cfg.neuron_type === 'completion';
  const { tools, delegates, bindings } = isCompletion
    ? { tools: [], delegates: [], bindings: {} }
    : await toolsetOf(d, scope, input, cfg);
  const history = await historyOf(d, scope, input, message, opts.freshTrace === true);
  const system = [
    cfg.system_prompt ?? '',
    data ? `Structured input (JSON):\n${JSON.stringify(data)}` : '',
    isCompletion ? 'Answer with a single JSON object.' : '',
  ]
    .filter(Boolean)
    .join('\n\n');
  return {
    model: modelId,
    ...(fallbackModels.length ? { fallbackModels } : {}),
    neuronName: snap.name,
    neuronType: cfg.neuron_type ?? null,
    temperature: cfg.temperature,
    maxTokens: cfg.max_tokens,
    responseFormat: isCompletion ? 'json' : 'text',
    tools,
    delegates,
    ...(Object.keys(bindings).length ? { bindings } : {}),
    ...(cfg.tool_approval && !isCompletion
      ? {
          toolApproval: {
            tools: cfg.tool_approval.tools,
            ...(cfg.tool_approval.timeout_s ? { timeoutS: cfg.tool_approval.timeout_s } : {}),
          },
        }
      : {}),
    messages: [...(system ? [{ role: 'system' as const, content: system }] : []), ...history],
  };
}

/**
 * The run's conversation before its first turn: a top-level run on an existing trace reads the
 * trace's newest engrams (leaving out this run's own human turn), then the message.
 */
async function historyOf(
  d: RunDeps,
  scope: Scope,
  input: NeuronRunInput,
  message: string,
  freshTrace: boolean,
): Promise<ChatMessage[]> {
  if (input.depth > 0 || input.pathwayContext || freshTrace) return [{ role: 'user', content: message }];
  // The trace's newest engrams (HISTORY_LIMIT, plus the run's own human turn); a trace that does not exist yet has none.
  const engrams = await d.traces.messages(scope, input.traceId, undefined, HISTORY_LIMIT + 1).catch((e: unknown) => {
    if ((e as { status?: number }).status === 404) return [];
    throw e;
  });
  const earlier = engrams.filter((e) => e._id !== input.userEngramId);
  return [...historyToMessages(earlier), { role: 'user', content: message }];
}

type Engram = Awaited<ReturnType<RunDeps['traces']['messages']>>[number];

function historyToMessages(engrams: Engram[]): ChatMessage[] {
  return engrams.slice(-HISTORY_LIMIT).map((e) => ({
    role: e.sourceType === 'neuron' ? ('assistant' as const) : ('user' as const),
    content: e.content.content,
  }));
}

/** The conversation of a turn: the stored context, then each earlier turn's accepted reply and its tool results. */
export function conversation(context: PreparedRunData, models: ModelStep[], tools: ToolStep[]): ChatMessage[] {
  const messages: ChatMessage[] = [...context.messages];
  for (const m of models) {
    if (m.toolCalls.length === 0) {
      messages.push({ role: 'assistant', content: m.text });
      continue;
    }
    messages.push({ role: 'assistant', content: m.text, toolCalls: m.toolCalls });
    for (const c of m.toolCalls) {
      const r = tools.find((t) => t.turn === m.turn && t.callId === c.id);
      messages.push({
        role: 'tool',
        content: r?.content ?? JSON.stringify({ error: 'no result recorded' }),
        toolCallId: c.id,
        name: c.name,
      });
    }
  }
  return messages;
}
