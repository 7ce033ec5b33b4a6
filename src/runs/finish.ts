import { bestEffort } from '../kernel/best-effort.js';
import { JSON_MAX_DEPTH, nestsDeeperThan } from '../kernel/json-depth.js';
import type { ModelStep, ToolStep } from './model.js';
import type { WriteGuard } from '../traces/index.js';
import type { Scope } from '../kernel/scope.js';
import { MAX_INLINE_TEXT, type NeuronRunInput, type NeuronRunResult } from '../temporal/definitions.js';
import {
  TOOL_PREVIEW,
  fromRunScope,
  preview,
  titleFrom,
  type FinishInput,
  type HeldSteps,
  type RunContext,
  type RunDeps,
} from './shared.js';
import { traceWriteGuard } from './trace-writes.js';

/** A run's end: the reply stored and the job completed, or the job failed. */
export const createFinishSteps = (ctx: RunContext) => ({
  /**
   * Stores the neuron engram, rolls up cost, titles the trace and completes the job (idempotent:
   * a retry after the engram was written completes from it). The reply is every turn's
   * accepted text, in order: exactly what a reader of the job stream shows (docs/streams.md).
   */
  finish: (f: FinishInput, held?: HeldSteps): Promise<NeuronRunResult & { cancelled?: boolean }> =>
    finish(ctx.d, f, held),
  /** Marks the job failed (no-op when already terminal) and ends its stream with its one terminal entry. */
  fail: (input: NeuronRunInput, reason: string): Promise<void> => fail(ctx.d, input, reason),
});

/** The reply as the run's steps (or its stored engram) hold it. */
interface Reply {
  text: string;
  toolCalls: NeuronRunResult['toolCalls'];
}

async function finish(
  d: RunDeps,
  f: FinishInput,
  held?: HeldSteps,
): Promise<NeuronRunResult & { cancelled?: boolean }> {
  const { jobs, traces, runLog } = d;
  const scope = fromRunScope(f.input.scope);
  // The job's usage is read from the ledger (every billed call, retried attempts included), so
  // the job result, the engram and the trace cost are the same figures as GET /v1/usage. A
  // run's model calls are billed under `<job>:chat:<turn>:<attempt>`, and a turn's attempts
  // are numbered up to its accepted one: every row is read by its key.
  const billedKeys = f.accepted.flatMap((last, turn) =>
    Array.from({ length: last }, (_, i) => `${f.input.jobId}:chat:${turn}:${i + 1}`),
  );
  // Whether the job ended meanwhile (a cancel): one Redis read of its stream's terminal fence,
  // which a cancel sets right after claiming the end, before the record shows it.
  const [ended, ledger, steps] = await Promise.all([
    jobs.endedAs(f.input.jobId),
    d.usage.totalsOf(scope.workspaceId, f.input.jobId, billedKeys),
    held ? { models: held.models, tools: [] } : runLog.steps(f.input.jobId, f.accepted),
  ]);
  const spent =
    ledger.calls > 0
      ? {
          inputTokens: ledger.inputTokens,
          outputTokens: ledger.outputTokens,
          totalTokens: ledger.totalTokens,
          costUsd: ledger.costUsd,
        }
      : f.usage;
  const base = { engramId: f.engramId, traceId: f.input.traceId, model: f.model, usage: spent, turns: f.turns };
  let reply = replyOf(f, steps);
  if (ended === 'failed') return { ...resultOf(f, base, reply), cancelled: true }; // cancelled meanwhile: store nothing
  const topLevel = f.input.depth === 0 && !f.input.pathwayContext;
  // A run prepared by the API carries its trace's title: it is written with the reply's counters.
  const title = topLevel ? f.input.context?.title : undefined;
  // The run's lease on writing into its trace: refused once its job (or its top job) ended, when
  // only a retry whose reply is stored already goes on (it completes from the stored engram).
  const guard = await traceWriteGuard(jobs, scope.workspaceId, f.input);
  if (!guard && !(await traces.findEngram(scope, f.engramId))) return { ...resultOf(f, base, reply), cancelled: true };
  const appended = await appendReply(d, scope, f, reply, spent, title, guard);
  if (appended.existed) reply = appended.reply;
  const result = resultOf(f, base, reply);
  // A delegated run's reply is its parent's tool result (stored, so the parent's next turn reads it).
  if (f.input.answers)
    await runLog.putTool(f.input.answers.jobId, {
      turn: f.input.answers.turn,
      callId: f.input.answers.callId,
      name: f.input.answers.name,
      content: reply.text,
    });
  if (topLevel && title === undefined) await titleTrace(d, scope, f, appended.trace);
  const applied = await jobs.finalize(scope.workspaceId, f.input.jobId, {
    status: 'completed',
    progress: 100,
    currentStep: 'completed',
    result,
  });
  if (applied)
    await traces.publish(scope, f.input.traceId, {
      type: 'run.completed',
      job_id: f.input.jobId,
      engram_id: f.engramId,
    });
  if (!held || held.stored) await bestEffort(d.log, 'dropping a completed run context', runLog.drop(f.input.jobId));
  return applied ? result : { ...result, cancelled: (await jobs.get(scope, f.input.jobId)).status === 'failed' };
}

/** Every turn's accepted text and each tool call with its whole stored result. */
function replyOf(f: FinishInput, steps: { models: ModelStep[]; tools: ToolStep[] }): Reply {
  let text = steps.models.map((m) => m.text).join('');
  const toolCalls = steps.models.flatMap((m) =>
    m.toolCalls.map((c) => ({
      name: c.name,
      arguments: c.arguments,
      result: steps.tools.find((r) => r.turn === m.turn && r.callId === c.id)?.content ?? '',
    })),
  );
  if (f.turns >= f.input.maxTurns && !text) text = `Stopped after ${f.input.maxTurns} model turns.`;
  return { text, toolCalls };
}

/** The workflow's result: the reply cut at MAX_INLINE_TEXT, tool results as previews, a completion's JSON output. */
function resultOf(
  f: FinishInput,
  base: Pick<NeuronRunResult, 'engramId' | 'traceId' | 'model' | 'usage' | 'turns'>,
  reply: Reply,
): NeuronRunResult {
  const { text } = reply;
  const output = outputOf(f, text);
  const inline =
    text.length > MAX_INLINE_TEXT ? { text: text.slice(0, MAX_INLINE_TEXT), textTruncated: true } : { text };
  return {
    ...inline,
    ...base,
    toolCalls: reply.toolCalls.map((c) => ({ ...c, result: preview(c.result, TOOL_PREVIEW) })),
    ...(output !== undefined ? { output } : {}),
  };
}

/**
 * A completion neuron's reply parsed as JSON (undefined for other neurons, or a reply that is not
 * JSON or nests deeper than JSON_MAX_DEPTH: the reply's text stands alone then).
 */
function outputOf(f: FinishInput, text: string): unknown {
  if (f.neuronType !== 'completion') return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    return nestsDeeperThan(v, JSON_MAX_DEPTH) ? undefined : v;
  } catch {
    return undefined;
  }
}

/**
 * Appends the reply's engram, claimed under its id: a retry (the engram is stored) gets the stored
 * reply back (`existed`); a first append returns the trace as it wrote it.
 */
async function appendReply(
  d: RunDeps,
  scope: Scope,
  f: FinishInput,
  reply: Reply,
  spent: NeuronRunResult['usage'],
  title: string | undefined,
  guard: WriteGuard | null,
) {
  const { text, toolCalls } = reply;
  const completion = outputOf(f, text);
  const appended = await d.traces.appendWithTrace(
    scope,
    f.input.traceId,
    {
      id: f.engramId,
      content: { type: 'neuron', content: text },
      metadata: {
        content_blocks: [{ type: 'text', text }],
        tool_calls: toolCalls,
        model: f.model,
        usage: spent,
        job_id: f.input.jobId,
        ...(f.input.parentJobId ? { delegated_from: f.input.parentJobId } : {}),
        ...(completion !== undefined ? { output: completion } : {}),
      },
      sourceType: 'neuron',
      sourceId: f.input.neuronId,
      targetType: 'user',
      targetId: f.input.scope.userId,
      traceType: f.input.traceType,
      jobId: f.input.jobId,
      cost: {
        totalCostUsd: spent.costUsd,
        totalTokens: spent.totalTokens,
        inputTokens: spent.inputTokens,
        outputTokens: spent.outputTokens,
      },
    },
    // The human turn (userEngramId) created the trace. Without a guard the reply is stored already (see finish).
    {
      absent: guard !== null,
      traceExists: f.input.userEngramId !== null,
      ...(guard ? { guard } : {}),
      ...(title !== undefined ? { title } : {}),
    },
  );
  if (!appended.existed) return { existed: false as const, trace: appended.trace };
  const stored: Reply = {
    text: appended.engram.content.content,
    toolCalls: ((appended.engram.metadata ?? {}) as { tool_calls?: NeuronRunResult['toolCalls'] }).tool_calls ?? [],
  };
  return { existed: true as const, reply: stored, trace: null };
}

/** A top-level run an activity prepared titles its trace when it has none yet. */
async function titleTrace(
  d: RunDeps,
  scope: Scope,
  f: FinishInput,
  read: Awaited<ReturnType<RunDeps['traces']['get']>> | null,
): Promise<void> {
  // The trace as the reply's append last read it (read again only when the reply was stored before).
  const trace = read ?? (await d.traces.get(scope, f.input.traceId));
  if (trace.title) return;
  const title =
    (await d.runLog.context(f.input.jobId))?.title ?? (f.input.message ? titleFrom(f.input.message) : undefined);
  if (title) await d.traces.setTitle(scope, f.input.traceId, title, 'generated', trace);
}

async function fail(d: RunDeps, input: NeuronRunInput, reason: string): Promise<void> {
  await d.interventions.cancelForJob(input.scope.workspaceId, input.jobId);
  const applied = await d.jobs.finalize(input.scope.workspaceId, input.jobId, {
    status: 'failed',
    failedReason: reason,
    currentStep: 'failed',
  });
  if (applied)
    await d.traces.publish(fromRunScope(input.scope), input.traceId, {
      type: 'run.failed',
      job_id: input.jobId,
      reason,
    });
  await bestEffort(d.log, 'dropping a failed run context', d.runLog.drop(input.jobId));
}
