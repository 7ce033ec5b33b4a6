import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import {
  BrainIdKey,
  JobKindKey,
  NeuronIdKey,
  TraceIdKey,
  WorkspaceIdKey,
  answerUpdate,
  cancelSignal,
  onTraceChain,
  statusQuery,
  type BudgetPause,
  type InterventionAnswer,
  type LiveStatus,
  type ModelTurnOutcome,
  type NeuronRunInput,
  type NeuronRunResult,
  type RunSummary,
  type ShortRunOutcome,
  type ToolApproval,
} from '../../src/temporal/definitions.js';
import type { ModelTurnInputRecord as ModelTurnInput } from '../../src/runs/index.js';
import { withinBudget } from '../budget-pause.js';
import { recordFailure } from '../failures.js';
import { TOOL_CALL_ACTIONS, needsApproval, refusal, withEdits } from './tool-approval.js';

/** The models a run may call, in order (as src/runs/fallback.ts chainOf; workflows import no services). */
const chainOf = (p: RunSummary): string[] => [p.model, ...(p.fallbackModels ?? [])];

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});
// Storing the reply and completing the job are short writes: a local activity saves a server
// round trip at the end of every run.
const local = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});
// A model turn streams for a while: it heartbeats on a timer for as long as the provider call is
// alive (a long think before the first token is fine), so Temporal notices a dead worker within
// heartbeatTimeout and retries the turn on another one. A provider's Retry-After sets the delay
// of that one retry (activities/failures.ts); 4xx answers are not retried.
const model = wf.proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 6 },
});
// A map item's turns (input.localTurns): local activities, so that an item that is one short turn
// runs in its child's first workflow task (prepare, turn, finish) with no activity task between.
// Their liveness is the workflow task's: a worker that dies mid-turn is noticed when the task times
// out, and the turn runs again on another worker under a newly claimed attempt number.
const localModel = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 6 },
});
// A model with a fallback after it (neuron_config.fallback_models) gets fewer retries: once they
// are spent the turn goes to the next model (answerTurn), which is quicker than waiting out a
// failing model's whole backoff.
const modelBeforeFallback = wf.proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 3 },
});
const localModelBeforeFallback = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 3 },
});
// The first turn of a run the API prepared is streamed by the API (src/runs/first-turns.ts):
// when it is done by the first workflow task, a local activity adopts it and a short run ends in
// that one task; else the `modelTurn` activity waits for it (heartbeating), or runs it again.
const adoptLocally = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '5 seconds',
  retry: { maximumAttempts: 1 },
});
// A tool call a person approved runs with a heartbeat timeout: a worker that dies while it runs is
// noticed within seconds and the call is retried on another one under the same Idempotency-Key
// (the answer is in the history, so it is never asked again nor lost).
const approvedTools = wf.proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});
/** How long that local activity waits for the API's turn to finish before leaving it to `modelTurn`. */
const ADOPT_LOCALLY_WAIT_MS = 500;
/** How long a run whose job was cancelled under it waits for Temporal's cancel request (sent right after). */
const CANCEL_REQUEST_WAIT = '1 minute';

/** What one neuron run holds while it loops (workflow memory only: rebuilt by replay, never stored). */
interface AgentRun {
  input: NeuronRunInput;
  /** The live status the `status` query returns. */
  status: LiveStatus;
  cancelReason: string | undefined;
  /** Budget pauses and tool calls waiting for a person this run opened, and the answers it accepted. */
  pauses: Map<
    string,
    { kind: 'budget' | 'tool_call'; state: 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled' }
  >;
  answers: Map<string, InterventionAnswer>;
  /** Budgets an admin let this run go beyond. */
  approvedBudgets: string[];
  /** The accepted attempt of each turn so far. */
  accepted: number[];
  usage: NeuronRunResult['usage'];
  toolCalls: NeuronRunResult['toolCalls'];
  /** The models the run may call: its model, then its fallbacks (known once the run is prepared). */
  chain: string[];
  /** The model of the chain turns start from: a model that failed is not asked again by this run. */
  modelIndex: number;
  /** The last error of each model of the chain that failed, by index. */
  modelErrors: Map<number, string>;
  /** The model that gave the last accepted reply. */
  answeredBy: string | undefined;
}

/**
 * The agent loop of one neuron invoke (docs/architecture.md): each model turn and each tool call is an
 * activity, a delegate_* tool runs the sub-neuron as a child workflow on the same trace.
 * Deterministic: ids come from wf.uuid4(), all I/O is in activities.
 */
export async function neuronRun(input: NeuronRunInput): Promise<NeuronRunResult> {
  const run: AgentRun = {
    input,
    status: { status: 'running', progress: 0, currentStep: 'starting' },
    cancelReason: undefined,
    pauses: new Map(),
    answers: new Map(),
    approvedBudgets: [],
    accepted: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, costUsd: 0 },
    toolCalls: [],
    chain: [],
    modelIndex: 0,
    modelErrors: new Map(),
    answeredBy: undefined,
  };
  listen(run);
  const engramId = wf.uuid4();
  try {
    // Inputs recorded before run contexts were stored by reference carry `prepared` instead of `context`.
    // A child run (a delegate, a pathway's neuron or map item) prepares in a local activity: one
    // workflow task and one activity task fewer per child, which a map of many items multiplies.
    // A map item (localTurns) was started by code that prepares locally: no patch marker to record
    // (each marker also upserts Temporal's change-version search attribute, a visibility write).
    const preparedByApi = Boolean(input.context ?? input.prepared);
    let prep: RunSummary;
    let given: ModelTurnOutcome | undefined;
    if (input.oneStep && !preparedByApi) {
      // A map item: prepare, first turn and (when that turn ends the run) the save, in one local activity.
      run.status.currentStep = 'model turn 1';
      run.status.progress = 5;
      const short = await runShort(run, engramId);
      prep = short.summary;
      run.chain = chainOf(prep);
      if (short.result && short.reply) {
        account(run, short.reply);
        return await ended(run, short.result);
      }
      // Tools to run, a budget pause, or a save to ask again: the loop goes on from the reply (or,
      // with none, runs the first turn itself on the context an earlier attempt stored).
      given = short.reply;
    } else {
      const prepare = input.depth > 0 && (input.localTurns || wf.patched('child-prepare-local')) ? local : steps;
      prep = input.context ?? input.prepared ?? (await prepare.prepareRun(input));
      run.chain = chainOf(prep);
    }
    let turn = 0;
    for (; turn < input.maxTurns; turn++) {
      const reply = await modelTurn(run, turn, preparedByApi, turn === 0 ? given : undefined);
      if (reply.toolCalls.length === 0 || prep.responseFormat === 'json') break;
      await runToolCalls(run, prep, reply, turn);
    }
    return await finish(run, prep, engramId, turn);
  } catch (err) {
    run.status.status = 'failed';
    for (const p of run.pauses.values()) if (p.state === 'pending') p.state = 'cancelled';
    return recordFailure(err, run.cancelReason, (reason) => steps.failRun(input, reason));
  }
}

/** The run's query, its cancel signal and the `answer` Update of its budget pauses and tool calls. */
function listen(run: AgentRun): void {
  const { pauses, answers } = run;
  wf.setHandler(statusQuery, () => run.status);
  // Cancellation itself arrives as a Temporal cancel request; the signal only carries the reason.
  wf.setHandler(cancelSignal, ({ reason }) => void (run.cancelReason = reason));
  // Budget pauses (docs/usage.md): an admin's answer is the same `answer` Update pathways take;
  // the validator refuses what the run does not wait for, the handler marks it answered first.
  wf.setHandler(
    answerUpdate,
    async (a) => {
      const p = pauses.get(a.interventionId)!;
      p.state = a.action === 'reject' ? 'rejected' : 'approved';
      answers.set(a.interventionId, a);
      if (p.kind === 'tool_call') {
        // Tool calls (neuron_config.tool_approval): the job runs again once no call of the turn waits.
        const last = !waitsForToolCall(run);
        if (last) {
          run.status.status = 'running';
          run.status.waitingFor = null;
        }
        return { interventionId: a.interventionId, status: await steps.recordToolAnswer(run.input, a, last) };
      }
      return { interventionId: a.interventionId, status: await steps.recordBudgetAnswer(run.input, a) };
    },
    {
      validator: (a) => {
        const p = pauses.get(a.interventionId);
        if (!p) throw new Error('This run is not waiting for that intervention');
        if (p.state !== 'pending') throw new Error(`Intervention is already ${p.state}`);
        const actions = p.kind === 'tool_call' ? TOOL_CALL_ACTIONS : ['approve', 'reject'];
        if (!actions.includes(a.action)) throw new Error(`action must be one of: ${actions.join(', ')}`);
        const edited = a.arguments && typeof a.arguments === 'object' && !Array.isArray(a.arguments);
        if ((a.action === 'edit') !== Boolean(edited))
          throw new Error(
            a.action === 'edit' ? 'arguments: required when action is edit' : 'arguments: only with action edit',
          );
      },
    },
  );
}

/**
 * Model turn `turn`: adopted from the API (a first turn it prepared and already ran) or asked of
 * the `modelTurn` activity, asked again after each budget pause an admin approves.
 */
async function modelTurn(
  run: AgentRun,
  turn: number,
  preparedByApi: boolean,
  given?: ModelTurnOutcome,
): Promise<ModelTurnOutcome> {
  const { input, status, approvedBudgets } = run;
  status.currentStep = `model turn ${turn + 1}`;
  status.progress = Math.min(90, 5 + Math.round((turn * 85) / input.maxTurns));
  const turnInput = () => ({
    jobId: input.jobId,
    workspaceId: input.scope.workspaceId,
    turn,
    accepted: [...run.accepted],
    ...(approvedBudgets.length ? { approvedBudgets: [...approvedBudgets] } : {}),
  });
  let adopted: ModelTurnOutcome | null = null;
  if (turn === 0 && preparedByApi && wf.patched('first-turn-adopted-locally')) {
    adopted = await adoptLocally.adoptFirstTurn(input.jobId, ADOPT_LOCALLY_WAIT_MS).catch(() => null);
  }
  const first =
    given ??
    adopted ??
    (await answerTurn(run, {
      // A run prepared by the API is marked running by its first turn (one hop fewer before the first token).
      start:
        turn === 0 && preparedByApi
          ? { scope: input.scope, traceId: input.traceId, neuronId: input.neuronId }
          : undefined,
      ...turnInput(),
    }));
  // A budget stopped the turn before its call: once an admin approves, the same turn runs.
  const reply = await withinBudget(first, {
    ask: () => answerTurn(run, turnInput()),
    budgetOf: (r) => r.budget,
    approved: approvedBudgets,
    waitForAdmin: (budget) => waitForAdmin(run, budget, turn),
    answered: () => {
      status.status = 'running';
      status.waitingFor = null;
      status.currentStep = `model turn ${turn + 1}`;
    },
  });
  account(run, reply);
  return reply;
}

/**
 * Model fallbacks (docs/neurons.md): the one loop over the run's chain of models. The turn is
 * asked of the model the run is at; when that model's `modelTurn` fails after its retries (or at
 * once, for a failure retrying cannot mend soon: src/runs/fallback.ts), the turn is asked
 * of the next model, whose attempt begins with the turn's `reset` (docs/streams.md). Later turns
 * start from the model that answered. The run fails only when the last model fails too, with
 * each model's error.
 */
async function answerTurn(run: AgentRun, t: Omit<ModelTurnInput, 'modelIndex'>): Promise<ModelTurnOutcome> {
  for (;;) {
    const i = run.modelIndex;
    const last = i >= run.chain.length - 1;
    const proxy = run.input.localTurns
      ? last
        ? localModel
        : localModelBeforeFallback
      : last
        ? model
        : modelBeforeFallback;
    try {
      return await proxy.modelTurn(i ? { ...t, modelIndex: i } : t);
    } catch (err) {
      const failure = modelFailure(err);
      if (failure === null) throw err;
      run.modelErrors.set(i, failure);
      if (last) throw allModelsFailed(run, err);
      run.modelIndex = i + 1;
    }
  }
}

/** A map item's one-step run; a model failure with fallbacks left goes on in the loop at the next model. */
async function runShort(run: AgentRun, engramId: string): Promise<ShortRunOutcome> {
  try {
    return await localModel.runShort(run.input, engramId);
  } catch (err) {
    const failure = modelFailure(err);
    if (failure === null || !wf.patched('model-fallbacks-short')) throw err;
    const summary = await local.prepareRun(run.input);
    if (!summary.fallbackModels?.length) throw err;
    run.modelErrors.set(0, failure);
    run.modelIndex = 1;
    return { summary };
  }
}

/** The message of a model's failure (a provider error after the activity's retries), or null for any other failure. */
function modelFailure(err: unknown): string | null {
  // An activity's failure wraps the activity's own; a local activity's (a map item's runShort) arrives unwrapped.
  const cause = err instanceof wf.ActivityFailure ? err.cause : err;
  if (!(cause instanceof wf.ApplicationFailure)) return null;
  return MODEL_FAILURES.has(cause.type ?? '') ? cause.message : null;
}
/** ApplicationFailure types of a provider's failure (activities/failures.ts; `LlmError` is a retryable one, retried out). */
const MODEL_FAILURES = new Set(['LLM_ERROR', 'LLM_RETRY_AFTER', 'LlmError', 'AbortError']);

/** The run's failure once its last model failed: each model's last error, in chain order (one model: its error as it was). */
function allModelsFailed(run: AgentRun, err: unknown): unknown {
  if (run.chain.length < 2) return err;
  const each = run.chain.map((m, i) => `${m}: ${run.modelErrors.get(i) ?? 'not reached'}`);
  return wf.ApplicationFailure.nonRetryable(`every model failed: ${each.join('; ')}`, 'ALL_MODELS_FAILED');
}

/** A turn's reply accepted: its attempt and its usage count for the run. */
function account(run: AgentRun, reply: ModelTurnOutcome): void {
  if (reply.model) run.answeredBy = reply.model;
  run.accepted.push(reply.attempt ?? 1);
  run.usage.inputTokens += reply.usage.inputTokens;
  run.usage.outputTokens += reply.usage.outputTokens;
  run.usage.totalTokens += reply.usage.totalTokens;
  run.usage.costUsd += reply.costUsd;
}

/** Opens a budget pause before model turn `turn` and waits until an admin's answer is accepted. */
async function waitForAdmin(run: AgentRun, budget: BudgetPause, turn: number): Promise<InterventionAnswer> {
  const { status } = run;
  const id = wf.uuid4();
  status.currentStep = `model turn ${turn + 1}: waiting for budget approval`;
  const waitingFor = await steps.openBudgetPause(run.input, {
    id,
    turn,
    budget,
    progress: status.progress,
    currentStep: status.currentStep,
  });
  run.pauses.set(id, { kind: 'budget', state: 'pending' });
  status.status = 'waiting';
  status.waitingFor = waitingFor;
  await wf.condition(() => run.answers.has(id));
  return run.answers.get(id)!;
}

/**
 * The turn's tool calls, one after the other: a delegate_* call runs its sub-neuron, any other the
 * `runTool` activity. Calls neuron_config.tool_approval names wait for a person first: their
 * interventions open together, and each call runs (or is refused) in the turn's order once its
 * own answer is in.
 */
async function runToolCalls(run: AgentRun, prep: RunSummary, reply: ModelTurnOutcome, turn: number): Promise<void> {
  const gated = await openToolApprovals(run, prep, reply, turn);
  for (const call of reply.toolCalls) {
    run.status.currentStep = `tool ${call.name}`;
    const execute = (c: ToolCall, approved: boolean) => {
      const delegate = prep.delegates.find((dl) => dl.tool === c.name);
      if (delegate) return runDelegate(run.input, delegate, c, turn);
      return (approved ? approvedTools : steps).runTool(run.input.jobId, c, turn);
    };
    const waitId = gated.ids.get(call.id);
    const result = waitId
      ? await afterAnswer(run, call, turn, waitId, gated.deadline, prep.toolApproval, execute)
      : await execute(call, false);
    run.toolCalls.push({ name: call.name, arguments: call.arguments, result });
  }
}

type ToolCall = ModelTurnOutcome['toolCalls'][number];

/** Whether a tool call of the run still waits for its answer. */
function waitsForToolCall(run: AgentRun): boolean {
  for (const p of run.pauses.values()) if (p.kind === 'tool_call' && p.state === 'pending') return true;
  return false;
}

/**
 * Opens a `tool_call` intervention for each call of the turn that needs a person, all at once,
 * and sets the job waiting. Returns the intervention id of each gated call and the shared
 * deadline (workflow time) of timeout_s.
 */
async function openToolApprovals(
  run: AgentRun,
  prep: RunSummary,
  reply: ModelTurnOutcome,
  turn: number,
): Promise<{ ids: Map<string, string>; deadline: number | undefined }> {
  const ids = new Map<string, string>();
  const approval = prep.toolApproval;
  const calls = reply.toolCalls.filter((c) => needsApproval(approval, c.name));
  if (!approval || !calls.length) return { ids, deadline: undefined };
  const { status } = run;
  const spec = calls.map((call) => {
    const interventionId = wf.uuid4();
    ids.set(call.id, interventionId);
    // Known before the record exists, so an answer that follows its creation is never refused.
    run.pauses.set(interventionId, { kind: 'tool_call', state: 'pending' });
    return { interventionId, call };
  });
  status.currentStep = `tool ${calls[0]!.name}: waiting for approval`;
  const deadline = approval.timeoutS ? Date.now() + approval.timeoutS * 1000 : undefined;
  const waitingFor = await steps.openToolApprovals(run.input, {
    turn,
    calls: spec,
    ...(approval.timeoutS ? { timeoutS: approval.timeoutS } : {}),
    progress: status.progress,
    currentStep: status.currentStep,
  });
  if (waitsForToolCall(run)) {
    status.status = 'waiting';
    status.waitingFor = waitingFor;
  }
  return { ids, deadline };
}

/**
 * Waits for the answer to one gated call (until the turn's deadline), then acts on it: approve
 * runs the call, edit runs it with the person's arguments, reject (or no answer in time) stores
 * the refusal as the call's result. The answer is in the workflow's history once accepted, so a
 * worker that dies meanwhile neither loses it nor runs the tool a second time.
 */
async function afterAnswer(
  run: AgentRun,
  call: ToolCall,
  turn: number,
  interventionId: string,
  deadline: number | undefined,
  approval: ToolApproval | undefined,
  execute: (c: ToolCall, approved: boolean) => Promise<string>,
): Promise<string> {
  const ready = () => run.answers.has(interventionId);
  const pause = run.pauses.get(interventionId)!;
  if (!ready()) {
    run.status.currentStep = `tool ${call.name}: waiting for approval`;
    const left = deadline === undefined ? undefined : deadline - Date.now();
    // condition(fn, undefined) would take the timeout overload and expire at once: call the right overload.
    const arrived =
      left === undefined ? (await wf.condition(ready), true) : left > 0 && (await wf.condition(ready, left));
    if (!arrived && !ready()) {
      // The timer won: from now on the validator refuses answers, then the record says so.
      pause.state = 'expired';
      const last = !waitsForToolCall(run);
      if (last) {
        run.status.status = 'running';
        run.status.waitingFor = null;
      }
      await steps.expireToolApproval(run.input, interventionId, last);
    }
  }
  // The answer is recorded (by the Update's handler) before the run acts on it.
  await wf.condition(wf.allHandlersFinished);
  run.status.currentStep = `tool ${call.name}`;
  const answer = run.answers.get(interventionId);
  if (!answer || answer.action === 'reject') {
    const why = answer ? refusal(call.name, answer.comment) : refusal(call.name, undefined, approval?.timeoutS ?? 0);
    return steps.refuseToolCall(run.input.jobId, call, turn, why);
  }
  // An edit runs with the person's arguments (recorded on the intervention as fields.arguments).
  const edited = answer.action === 'edit' && answer.arguments ? withEdits(call.arguments, answer.arguments) : null;
  return execute(edited === null ? call : { ...call, arguments: edited }, true);
}

/** Stores the reply and completes the job (`turn`: the last turn the loop ran, or maxTurns when it ran out). */
async function finish(run: AgentRun, prep: RunSummary, engramId: string, turn: number): Promise<NeuronRunResult> {
  const { input, status } = run;
  status.currentStep = 'saving';
  status.progress = 95;
  await wf.condition(wf.allHandlersFinished); // an admin's answer is recorded before the run ends
  const result = await local.finishRun({
    input,
    engramId,
    // The model that gave the reply (a fallback when the run's model failed).
    model: run.answeredBy ?? prep.model,
    turns: Math.min(turn + 1, input.maxTurns),
    accepted: run.accepted,
    usage: run.usage,
    neuronType: prep.neuronType,
  });
  return ended(run, result);
}

/** The run's saved result: Canceled in Temporal when the job was cancelled meanwhile, else completed. */
async function ended(run: AgentRun, result: NeuronRunResult & { cancelled?: boolean }): Promise<NeuronRunResult> {
  const { status } = run;
  if (result.cancelled) {
    // The job was cancelled while the reply was being saved: the cancel request follows the
    // job's transition at once, and the run must end Canceled (not Completed) in Temporal.
    await wf.condition(() => false, CANCEL_REQUEST_WAIT);
    throw wf.ApplicationFailure.nonRetryable('the job was cancelled', 'CANCELLED');
  }
  status.status = 'completed';
  status.progress = 100;
  status.currentStep = 'completed';
  return result;
}

/** Runs a sub-neuron as a child workflow on the same trace; its reply becomes the tool result. */
async function runDelegate(
  input: NeuronRunInput,
  delegate: { neuronId: string; version: number; name: string },
  call: { id: string; name: string; arguments: string },
  turn: number,
): Promise<string> {
  let message = call.arguments;
  try {
    const parsed = JSON.parse(call.arguments) as { message?: unknown };
    if (typeof parsed.message === 'string') message = parsed.message;
  } catch {
    /* the raw text is the message */
  }
  const childJobId = wf.uuid4();
  await steps.emitJobEvent(input.jobId, { type: 'delegate', neuron: delegate.name, child_job_id: childJobId });
  const child = await wf.executeChild(neuronRun, {
    workflowId: childJobId,
    args: [
      {
        jobId: childJobId,
        scope: input.scope,
        neuronId: delegate.neuronId,
        neuronVersion: delegate.version,
        traceId: input.traceId,
        traceType: input.traceType,
        message,
        userEngramId: null,
        depth: input.depth + 1,
        maxTurns: input.maxTurns,
        parentJobId: input.jobId,
        rootJobId: input.rootJobId ?? input.jobId,
        ...(onTraceChain(input) ? { traceChain: true } : {}),
        pathwayContext: input.pathwayContext ?? null,
        // The child stores its reply as this call's result, where this run's next turn reads it.
        answers: { jobId: input.jobId, turn, callId: call.id, name: call.name },
      },
    ],
    typedSearchAttributes: [
      { key: WorkspaceIdKey, value: input.scope.workspaceId },
      { key: JobKindKey, value: 'neuron' },
      { key: NeuronIdKey, value: delegate.neuronId },
      { key: TraceIdKey, value: input.traceId },
      ...(input.scope.brainId ? [{ key: BrainIdKey, value: input.scope.brainId }] : []),
    ],
  });
  // The whole reply is the stored tool result; the workflow keeps a preview.
  return child.text.length > 2_000 ? `${child.text.slice(0, 2_000)}…` : child.text;
}
