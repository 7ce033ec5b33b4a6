import { metrics } from '../kernel/metrics.js';
import type { BudgetDoc } from '../usage/index.js';
import { AppError, validationError } from '../kernel/errors.js';
import { costOf } from '../llm/pricing.js';
import type { ResolvedModel } from '../llm/registry.js';
import { estimateTokens, type ChatMessage, type ChatResult } from '../llm/types.js';
import type { ModelTurnOutcome, PreparedRunData } from '../temporal/definitions.js';
import { bestEffort } from '../kernel/best-effort.js';
import type { ModelStep } from './model.js';
import { conversation } from './context.js';
import { failover, firstTokenDeadline, modelOf } from './fallback.js';
import { noAttribution, type RunContext, type RunDeps, type RunSteps, type TurnAttempt } from './shared.js';

/** The engine's context for model turns, with the one step of another module they call. */
type TurnContext = RunContext & { calls: Pick<RunSteps, 'markStarted'> };

/** Model turns: the activity's turn (adopting the API's first turn), and the body of one attempt wherever it runs. */
export const createTurnSteps = (ctx: TurnContext) => ({
  /**
   * One attempt of one model turn, streaming tokens into the job stream (docs/streams.md).
   * Attempt N > 1 first writes a `reset` for the turn: readers drop the turn's earlier tokens,
   * and the stream's fence refuses any late token of an older attempt. The attempt's text and
   * tool calls are stored as a step; the workflow gets the decision and the figures.
   */
  modelTurn: (t: TurnAttempt, signal?: AbortSignal): Promise<ModelTurnOutcome> => modelTurn(ctx, t, signal),
  /** The outcome of the API's first turn when it is done within `waitMs` (a local activity of the workflow), else null. */
  adoptFirstTurn: (jobId: string, waitMs: number): Promise<ModelTurnOutcome | null> =>
    ctx.d.firstTurns.peek(jobId, waitMs),
  /**
   * The body of one model turn attempt, wherever it runs: the activity, or the API for the
   * first turn of an invoke (`inApi`, with the context it has just stored).
   */
  runTurn: (
    t: TurnAttempt,
    signal?: AbortSignal,
    opts: { inApi?: PreparedRunData; budgets?: Promise<BudgetDoc[]> } = {},
  ): Promise<ModelTurnOutcome> => runTurn(ctx, t, signal, opts).then((r) => r.outcome),
  /**
   * A first turn on a context in hand that is not stored (a map item's `runShort`): as `runTurn`,
   * but the attempt's step is returned instead of stored (null when a budget stopped the turn),
   * for the caller to store only if the run goes on.
   */
  runHeldTurn: (
    t: TurnAttempt,
    context: PreparedRunData,
    signal?: AbortSignal,
  ): Promise<{ outcome: ModelTurnOutcome; step: ModelStep | null }> => runTurn(ctx, t, signal, { held: context }),
});

async function modelTurn(ctx: TurnContext, t: TurnAttempt, signal?: AbortSignal): Promise<ModelTurnOutcome> {
  // The first turn of an invoke was started by the API (src/runs/first-turns.ts): its
  // outcome is adopted (waiting while it streams); the turn runs here only when it did not
  // finish there (failed, or the API process is gone), as a new attempt.
  if (t.turn === 0 && t.start && t.attempt !== 'claim' && !t.modelIndex) {
    const adopted = await ctx.d.firstTurns.adopt(t.jobId, t.attempt, signal);
    if (adopted) return adopted;
  }
  return (await runTurn(ctx, t, signal, {})).outcome;
}

/** What one attempt needs once its context is read: the conversation, the model, and the pending side writes. */
interface TurnSetup {
  context: PreparedRunData;
  attempt: number;
  fence: { turn: number; attempt: number };
  messages: ChatMessage[];
  /** The model of the run's chain this attempt calls (TurnAttempt.modelIndex). */
  resolved: ResolvedModel;
  /** Whether a fallback model comes after it (its failures then move the turn on: src/runs/fallback.ts). */
  hasNext: boolean;
  /** Marking the job running (a first turn), awaited before the turn returns. */
  started: Promise<void>;
  /** What the budgets covering this call have spent. */
  spent: Promise<Parameters<RunDeps['budgets']['judge']>[0]>;
  attribution: NonNullable<PreparedRunData['attribution']>;
}

/**
 * One attempt of a turn. `held`: the context is in hand and not stored, and the attempt's step is
 * returned rather than stored (see runHeldTurn); otherwise the step is stored and `step` is null.
 */
async function runTurn(
  ctx: TurnContext,
  t: TurnAttempt,
  signal: AbortSignal | undefined,
  opts: { inApi?: PreparedRunData; held?: PreparedRunData; budgets?: Promise<BudgetDoc[]> },
): Promise<{ outcome: ModelTurnOutcome; step: ModelStep | null }> {
  const s = await setUpTurn(ctx, t, opts);
  const stopped = await budgetStop(ctx.d, s);
  if (stopped) return { outcome: stopped, step: null };
  const res = await callModel(ctx.d, t, s, signal);
  const { jobs, usage, runLog } = ctx.d;
  const step: ModelStep = { turn: t.turn, attempt: s.attempt, text: res.text, toolCalls: res.toolCalls };
  await Promise.all([
    usage.record({ ...billedCall(t, s), usage: res.usage }),
    opts.held ? null : runLog.putModel(t.jobId, step),
    s.started,
  ]);
  const { costUsd } = costOf(s.resolved.id, res.usage);
  await jobs.emit(t.jobId, {
    type: 'progress',
    step: `model turn ${t.turn + 1} done`,
    ...s.fence,
    model: s.resolved.id,
    usage: res.usage,
    tool_calls: res.toolCalls.map((c) => c.name),
  });
  const outcome = {
    attempt: s.attempt,
    toolCalls: res.toolCalls,
    usage: res.usage,
    costUsd,
    finishReason: res.finishReason,
    textChars: res.text.length,
    model: s.resolved.id,
  };
  return { outcome, step: opts.held ? step : null };
}

/** Reads the run context and the earlier turns, and starts the side work that overlaps the provider call. */
async function setUpTurn(
  ctx: TurnContext,
  t: TurnAttempt,
  opts: { inApi?: PreparedRunData; held?: PreparedRunData; budgets?: Promise<BudgetDoc[]> },
): Promise<TurnSetup> {
  const { jobs, runLog, budgets, models } = ctx.d;
  // The workspace's budgets are read alongside the run context (off the path to the first token).
  const workspaceBudgets = opts.budgets ?? budgets.ofWorkspace(t.workspaceId);
  // Silent on purpose: awaited (and rethrown) below through `spent`; this only avoids an unhandled rejection meanwhile.
  workspaceBudgets.catch(() => undefined);
  // Marking the job running overlaps the provider's time to first token instead of preceding it.
  // On a first attempt the `running` entry goes out before any token (one Redis write, made
  // while the run context is read).
  const emitted = t.start !== undefined && t.attempt === 1 && !t.modelIndex;
  // A turn run as a local activity claims its attempt number while the context loads; so does a
  // fallback model's turn (its activity's own attempt numbers start again at 1).
  const [context, claimed] = await Promise.all([
    opts.inApi ?? opts.held ?? runLog.context(t.jobId),
    t.attempt === 'claim' || t.modelIndex ? jobs.claimTurnAttempt(t.jobId, t.turn) : t.attempt,
    emitted ? jobs.emit(t.jobId, { type: 'status', status: 'running' }) : null,
  ]);
  if (!context) throw validationError(`run context of job ${t.jobId} is missing`);
  // The activity runs a first turn the API had claimed only when the API's attempt did not
  // finish: as the next attempt, whose reset fences off whatever the API's attempt streamed.
  const attempt =
    t.turn === 0 && t.start && !opts.inApi && !t.modelIndex && context.firstTurn === 'api' ? claimed + 1 : claimed;
  const fence = { turn: t.turn, attempt };
  const started = t.start ? ctx.calls.markStarted({ ...t.start, jobId: t.jobId }, { emitted }) : Promise.resolve();
  started.catch(() => undefined); // awaited (and rethrown) below; this only avoids an unhandled-rejection warning meanwhile
  const attribution = context.attribution ?? noAttribution(t.jobId);
  // What the budgets covering this call have spent, summed while the conversation loads (docs/usage.md).
  const spent = workspaceBudgets.then((all) => budgets.spentOf(budgets.covering(all, attribution, t.approvedBudgets)));
  spent.catch(() => undefined); // silent on purpose: awaited (and rethrown) below, as `started` is
  if (attempt > 1) await jobs.emit(t.jobId, { type: 'reset', ...fence });
  // The first turn has no earlier steps to read (one query fewer before the first token).
  const { models: done, tools: results } = t.accepted.length
    ? await runLog.steps(t.jobId, t.accepted)
    : { models: [], tools: [] };
  const messages = conversation(context, done, results);
  const { resolved, hasNext } = modelOf(models, context, t.modelIndex);
  return { context, attempt, fence, messages, resolved, hasNext, started, spent, attribution };
}

/**
 * The check before the call: what is spent (ledger sums) plus this turn's prompt, estimated. A
 * budget with the fail policy fails the turn; with the pause policy the turn returns the budget.
 */
async function budgetStop(d: RunDeps, s: TurnSetup): Promise<ModelTurnOutcome | null> {
  const promptTokens = estimateTokens(s.messages.map((m) => m.content).join(''));
  const over = d.budgets.judge(await s.spent, {
    tokens: promptTokens,
    costNanos: Math.round(costOf(s.resolved.id, { inputTokens: promptTokens, outputTokens: 0 }).costUsd * 1e9),
  });
  if (!over) return null;
  await s.started;
  if (over.policy === 'fail') throw new AppError('BUDGET_EXCEEDED', 402, over.message);
  return {
    attempt: s.attempt,
    toolCalls: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    costUsd: 0,
    finishReason: 'budget',
    textChars: 0,
    budget: { ...over },
  };
}

/** The ledger row of this attempt's call; found by its key when the run finishes, so the row needs no job place. */
const billedCall = (t: TurnAttempt, s: TurnSetup) => ({
  key: `${t.jobId}:chat:${t.turn}:${s.attempt}`,
  workspaceId: t.workspaceId,
  kind: 'chat' as const,
  modelId: s.resolved.id,
  attribution: s.attribution,
  placed: false,
});

/** The provider call, each token into the job stream; a call that broke after its first token is billed (estimated). */
async function callModel(d: RunDeps, t: TurnAttempt, s: TurnSetup, signal?: AbortSignal): Promise<ChatResult> {
  const { context, resolved, messages } = s;
  let index = 0;
  let streamed = '';
  const calledAt = performance.now();
  // A model with a fallback after it has until the first-token deadline to start answering.
  const deadline = s.hasNext ? firstTokenDeadline(d.config.MODEL_FIRST_TOKEN_TIMEOUT_MS, signal) : undefined;
  try {
    return await resolved.provider.chat(
      {
        model: resolved.model,
        messages,
        tools: context.tools.length ? context.tools : undefined,
        temperature: context.temperature,
        maxTokens: context.maxTokens,
        responseFormat: context.responseFormat,
        signal: deadline?.signal ?? signal,
        onChunk: deadline?.met,
      },
      async (delta) => {
        if (index === 0)
          metrics.firstToken.observe({ provider: resolved.id.split('/')[0] }, (performance.now() - calledAt) / 1000);
        streamed += delta;
        await d.jobs.emit(t.jobId, { type: 'token', ...s.fence, index: index++, text: delta });
      },
    );
  } catch (e) {
    // A call that broke after the model had started answering was billed by the provider:
    // the ledger records it (counts estimated), so totals are what the provider invoices.
    if (index > 0) {
      const inputTokens = estimateTokens(messages.map((m) => m.content).join(''));
      const outputTokens = estimateTokens(streamed);
      await bestEffort(
        d.log,
        'recording the usage of a failed model call',
        d.usage.record({
          ...billedCall(t, s),
          usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
          outcome: 'failed',
          estimated: true,
        }),
      );
    }
    throw s.hasNext
      ? failover(resolved.id, e, { deadline, signal, patienceMs: d.config.MODEL_RETRY_AFTER_PATIENCE_MS })
      : e;
  } finally {
    deadline?.met();
  }
}
