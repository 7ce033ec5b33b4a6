import { Context } from '@temporalio/activity';
import type { ToolCall } from '../src/llm/types.js';
import type { FinishInput, ModelTurnInput, ToolApprovalSpec } from '../src/runs/index.js';
import type { Services } from '../src/compose/services.js';
import type { BudgetPause, InterventionAnswer, NeuronRunInput } from '../src/temporal/definitions.js';
import { permanentOn4xx } from './failures.js';

/** How often a model turn heartbeats while its provider call is alive (the heartbeat timeout is a few times this). */
const MODEL_HEARTBEAT_MS = 1_000;

/**
 * Runs `fn` while heartbeating on a timer: liveness does not depend on tokens (a model that
 * thinks for a minute before its first token, a turn that only calls tools, long pauses), yet a
 * worker that dies stops heartbeating and Temporal retries the turn elsewhere within the
 * heartbeat timeout. The SDK throttles what it sends to the server.
 */
async function withHeartbeat<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  // No heartbeat at the start: the timeout runs from the attempt's start anyway, and the SDK sends
  // a first heartbeat at once, so a short turn (most of a map's items) would pay a server call for nothing.
  const timer = setInterval(() => ctx.heartbeat(), MODEL_HEARTBEAT_MS);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}

/** Neuron-run activities: thin adapters over the run service (activities hold no logic of their own). */
export const createRunActivities = ({ services }: { services: Services }) => ({
  prepareRun: (input: NeuronRunInput) => permanentOn4xx(() => services.runs.prepare(input)),

  modelTurn: (t: ModelTurnInput) => {
    const ctx = Context.current();
    // As a local activity (a map item's turn), Temporal's attempt number starts again at 1 when the
    // workflow task is retried on another worker: the turn claims its attempt from the job stream.
    // A local activity's liveness is its workflow task's, so it does not heartbeat.
    const attempt = ctx.info.isLocal ? ('claim' as const) : ctx.info.attempt;
    const turn = () => permanentOn4xx(() => services.runs.modelTurn({ ...t, attempt }, ctx.cancellationSignal));
    return ctx.info.isLocal ? turn() : withHeartbeat(turn);
  },

  /** A map item's run in one local activity (prepare, first turn, save): see services.runs.runShort. */
  runShort: (input: NeuronRunInput, engramId: string) => {
    const ctx = Context.current();
    return permanentOn4xx(() => services.runs.runShort(input, engramId, ctx.cancellationSignal));
  },

  adoptFirstTurn: (jobId: string, waitMs: number) => services.runs.adoptFirstTurn(jobId, waitMs),
  runTool: (jobId: string, call: ToolCall, turn?: number) => {
    const { info } = Context.current();
    const run = () => permanentOn4xx(() => services.runs.runTool(jobId, call, turn, info.attempt));
    // Scheduled with a heartbeat timeout (an approved call): a dead worker is noticed within it and
    // the call is retried elsewhere under the same Idempotency-Key.
    return info.heartbeatTimeoutMs ? withHeartbeat(run) : run();
  },
  finishRun: (f: FinishInput) => permanentOn4xx(() => services.runs.finish(f)),
  failRun: (input: NeuronRunInput, reason: string) => services.runs.fail(input, reason),
  openBudgetPause: (
    input: NeuronRunInput,
    p: { id: string; turn: number; budget: BudgetPause; progress: number; currentStep: string },
  ) => permanentOn4xx(() => services.runs.openBudgetPause(input, p)),
  recordBudgetAnswer: (input: NeuronRunInput, answer: InterventionAnswer) =>
    permanentOn4xx(() => services.runs.recordBudgetAnswer(input, answer)),
  openToolApprovals: (input: NeuronRunInput, spec: ToolApprovalSpec) =>
    permanentOn4xx(() => services.runs.openToolApprovals(input, spec)),
  recordToolAnswer: (input: NeuronRunInput, answer: InterventionAnswer, last: boolean) =>
    permanentOn4xx(() => services.runs.recordToolAnswer(input, answer, last)),
  expireToolApproval: (input: NeuronRunInput, interventionId: string, last: boolean) =>
    permanentOn4xx(() => services.runs.expireToolApproval(input, interventionId, last)),
  refuseToolCall: (jobId: string, call: ToolCall, turn: number, refusal: Record<string, unknown>) =>
    permanentOn4xx(() => services.runs.refuseToolCall(jobId, call, turn, refusal)),
  emitJobEvent: (jobId: string, event: Record<string, unknown>) =>
    services.jobs.emit(jobId, event).then(() => undefined),
});
