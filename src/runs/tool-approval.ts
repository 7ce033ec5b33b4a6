import type { ToolCall } from '../llm/types.js';
import type { InterventionAnswer, NeuronRunInput } from '../temporal/definitions.js';
import { TOOL_PREVIEW, fromRunScope, preview, type RunContext, type RunDeps } from './shared.js';

/** What the workflow asks for when a turn's tool calls need a person: one intervention per call, opened together. */
export interface ToolApprovalSpec {
  turn: number;
  /** Each gated call with the intervention id the workflow chose for it. */
  calls: { interventionId: string; call: ToolCall }[];
  timeoutS?: number;
  progress: number;
  currentStep: string;
}

/** What a redacted value reads as in a tool call's intervention. */
export const REDACTED_ARGUMENT = '[redacted]';
/** Argument names whose values are credentials: shown redacted to the person who decides. */
const SECRET_KEY =
  /pass(word|wd|phrase)?$|secret|token|api[-_]?key|authori[sz]ation|credential|cookie|private[-_]?key|session[-_]?id|signature/i;
/** Values that are credentials whatever their name: bearer headers, provider and platform key formats. */
const SECRET_VALUE =
  /^(Bearer|Basic)\s+\S{8,}|^(sk|pk|rk)[-_][A-Za-z0-9_-]{16,}|^gh[pousr]_[A-Za-z0-9]{20,}|^xox[abpr]-|^AKIA[0-9A-Z]{16}$|^eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\./;

/**
 * A tool call's arguments as the person deciding sees them: values under credential-like names,
 * and strings shaped like keys or tokens, read REDACTED_ARGUMENT. The tool itself runs with the
 * model's arguments (or the person's edit, where a value left redacted keeps the model's).
 */
export function redactArguments(value: unknown, key = ''): unknown {
  if (key && SECRET_KEY.test(key) && value !== null && typeof value !== 'object') return REDACTED_ARGUMENT;
  if (typeof value === 'string') return SECRET_VALUE.test(value.trim()) ? REDACTED_ARGUMENT : value;
  if (Array.isArray(value)) return value.map((v) => redactArguments(v));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactArguments(v, k)]));
  return value;
}

/**
 * A tool result as the job stream shows it: a JSON result redacted as arguments are (credential
 * names, key-shaped strings), other text redacted when it is key-shaped as a whole. The model and
 * the run's stored step keep the result as the tool answered it.
 */
export function redactResult(text: string): string {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed !== null && typeof parsed === 'object') return JSON.stringify(redactArguments(parsed));
  } catch {
    /* plain text */
  }
  return redactArguments(text) as string;
}

/** The arguments of a call as the model sent them (the raw text when they are not a JSON object). */
function argumentsOf(call: ToolCall): Record<string, unknown> | string {
  try {
    const parsed = JSON.parse(call.arguments || '{}') as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : call.arguments;
  } catch {
    return call.arguments;
  }
}

/** Tool calls that wait for a person (neuron_config.tool_approval; docs/tools.md). */
export const createToolApprovalSteps = (ctx: RunContext) => ({
  /**
   * Opens one `tool_call` intervention per gated call of a turn (idempotent on the ids the
   * workflow chose) and sets the job waiting; the job stream gets a `waiting` entry per call.
   */
  openToolApprovals: (input: NeuronRunInput, spec: ToolApprovalSpec): Promise<Record<string, unknown>> =>
    openToolApprovals(ctx.d, input, spec),
  /** Records a person's answer the run accepted; `last`: no call of the turn waits any more (the job runs again). */
  recordToolAnswer: (input: NeuronRunInput, answer: InterventionAnswer, last: boolean): Promise<string> =>
    recordToolAnswer(ctx.d, input, answer, last),
  /** A call nobody answered within timeout_s: its intervention expires (it counts as a rejection). */
  expireToolApproval: (input: NeuronRunInput, interventionId: string, last: boolean): Promise<void> =>
    expireToolApproval(ctx.d, input, interventionId, last),
  /** Stores a refusal as the call's result (the tool did not run): the model reads it on its next turn. */
  refuseToolCall: (jobId: string, call: ToolCall, turn: number, refusal: Record<string, unknown>): Promise<string> =>
    refuseToolCall(ctx.d, jobId, call, turn, refusal),
});

async function openToolApprovals(d: RunDeps, input: NeuronRunInput, spec: ToolApprovalSpec) {
  const scope = fromRunScope(input.scope);
  const docs = [];
  for (const { interventionId, call } of spec.calls) {
    const args = redactArguments(argumentsOf(call));
    docs.push(
      await d.interventions.create(scope, {
        id: interventionId,
        jobId: input.jobId,
        traceId: input.traceId,
        pathwayId:
          input.pathwayContext?.pathwayId && input.pathwayContext.pathwayId !== 'inline'
            ? input.pathwayContext.pathwayId
            : null,
        brainId: scope.brainId ?? null,
        nodeIndex: input.pathwayContext?.nodeIndex ?? -1,
        kind: 'tool_call',
        title: `Run tool ${call.name}?`,
        prompt: `The agent wants to call ${call.name} with ${preview(JSON.stringify(args), 2_000)}. Approve to run it, edit its arguments, or reject it.`,
        options: ['approve', 'edit', 'reject'],
        ...(spec.timeoutS ? { expiresInS: spec.timeoutS } : {}),
        payload: { tool: call.name, arguments: args, turn: spec.turn, call_id: call.id },
      }),
    );
  }
  const first = docs[0]!;
  const waitingFor = {
    type: 'intervention',
    interventionId: first._id,
    kind: 'tool_call',
    turn: spec.turn,
    title: first.title,
    prompt: first.prompt,
    options: first.options,
    expires_at: first.expiresAt?.toISOString() ?? null,
    // Every call of the turn that waits, in the order the model made them (answered one by one).
    tool_calls: docs.map((doc) => ({ intervention_id: doc._id, ...doc.payload })),
  };
  await d.jobs.transition(scope.workspaceId, input.jobId, {
    status: 'waiting',
    waitingFor,
    progress: spec.progress,
    currentStep: spec.currentStep,
  });
  for (const doc of docs)
    await d.jobs.emit(input.jobId, {
      type: 'waiting',
      intervention_id: doc._id,
      options: doc.options,
      reason: 'tool_call',
      tool: doc.payload?.tool,
      arguments: doc.payload?.arguments,
      turn: spec.turn,
      expires_at: doc.expiresAt?.toISOString() ?? null,
    });
  await d.traces.publish(scope, input.traceId, {
    type: 'run.waiting',
    job_id: input.jobId,
    intervention_id: first._id,
  });
  return waitingFor;
}

/** Once no call of the turn waits: the job runs again. */
async function running(d: RunDeps, input: NeuronRunInput): Promise<void> {
  await d.jobs.transition(input.scope.workspaceId, input.jobId, { status: 'running', waitingFor: null });
  await d.jobs.emit(input.jobId, { type: 'status', status: 'running' });
}

async function recordToolAnswer(d: RunDeps, input: NeuronRunInput, answer: InterventionAnswer, last: boolean) {
  const doc = await d.interventions.recordAnswer(input.scope.workspaceId, answer, 'tool_call');
  await d.jobs.emit(input.jobId, {
    type: 'intervention_answered',
    intervention_id: doc._id,
    action: answer.action,
  });
  if (last) await running(d, input);
  return doc.status;
}

async function expireToolApproval(d: RunDeps, input: NeuronRunInput, interventionId: string, last: boolean) {
  await d.interventions.close(input.scope.workspaceId, interventionId, 'expired');
  await d.jobs.emit(input.jobId, { type: 'intervention_expired', intervention_id: interventionId });
  if (last) await running(d, input);
}

async function refuseToolCall(
  d: RunDeps,
  jobId: string,
  call: ToolCall,
  turn: number,
  refusal: Record<string, unknown>,
): Promise<string> {
  const result = JSON.stringify(refusal);
  await d.runLog.putTool(jobId, { turn, callId: call.id, name: call.name, content: result });
  await d.jobs.emit(jobId, {
    type: 'tool',
    name: call.name,
    result: preview(redactResult(result), TOOL_PREVIEW),
    refused: true,
  });
  return preview(result, TOOL_PREVIEW);
}
