import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import {
  BrainIdKey, JobKindKey, NeuronIdKey, TraceIdKey, WorkspaceIdKey, cancelSignal, statusQuery,
  type LiveStatus, type NeuronRunInput, type NeuronRunResult,
} from '../src/temporal/definitions.js';
import { recordFailure } from './failures.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});
// Storing the reply and completing the job are short writes: a local activity saves a server
// round trip at the end of every run.
const local = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds', retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});
// A model turn streams for a while: heartbeats (from each token) let Temporal notice a dead
// worker within heartbeatTimeout and retry the turn on another one.
const model = wf.proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes', heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 4 },
});

/**
 * The agent loop of one neuron invoke (DESIGN.md): each model turn and each tool call is an
 * activity, a delegate_* tool runs the sub-neuron as a child workflow on the same trace.
 * Deterministic: ids come from wf.uuid4(), all I/O is in activities.
 */
export async function neuronRun(input: NeuronRunInput): Promise<NeuronRunResult> {
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: 'starting' };
  let cancelReason: string | undefined;
  wf.setHandler(statusQuery, () => status);
  // Cancellation itself arrives as a Temporal cancel request; the signal only carries the reason.
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  const engramId = wf.uuid4();
  const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0, costUsd: 0 };
  const toolCalls: NeuronRunResult['toolCalls'] = [];

  try {
    const prep = input.prepared ?? (await steps.prepareRun(input));
    const messages = [...prep.messages];
    let text = '';
    let turn = 0;
    for (; turn < input.maxTurns; turn++) {
      status.currentStep = `model turn ${turn + 1}`;
      status.progress = Math.min(90, 5 + Math.round((turn * 85) / input.maxTurns));
      const reply = await model.modelTurn({
        // A run prepared by the API is marked running by its first turn (one hop fewer before the first token).
        start: turn === 0 && input.prepared ? { ...input, prepared: undefined } : undefined,
        jobId: input.jobId, workspaceId: input.scope.workspaceId, turn, model: prep.model, messages, tools: prep.tools,
        temperature: prep.temperature, maxTokens: prep.maxTokens, responseFormat: prep.responseFormat,
      });
      usage.inputTokens += reply.usage.inputTokens;
      usage.outputTokens += reply.usage.outputTokens;
      usage.totalTokens += reply.usage.totalTokens;
      usage.costUsd += reply.costUsd;
      text = reply.text;
      if (reply.toolCalls.length === 0 || prep.responseFormat === 'json') break;
      messages.push({ role: 'assistant', content: reply.text, toolCalls: reply.toolCalls });
      for (const call of reply.toolCalls) {
        status.currentStep = `tool ${call.name}`;
        const delegate = prep.delegates.find((dl) => dl.tool === call.name);
        let result: string;
        if (delegate) {
          result = await runDelegate(input, delegate, call.arguments);
        } else {
          result = await steps.runTool(input.jobId, call);
        }
        toolCalls.push({ name: call.name, arguments: call.arguments, result });
        messages.push({ role: 'tool', content: result, toolCallId: call.id, name: call.name });
      }
    }
    if (turn >= input.maxTurns) text = text || `Stopped after ${input.maxTurns} model turns.`;
    status.currentStep = 'saving';
    status.progress = 95;
    const result = await local.finishRun({ input, engramId, text, model: prep.model, turns: Math.min(turn + 1, input.maxTurns), usage, toolCalls, neuronType: prep.neuronType });
    status.status = 'completed';
    status.progress = 100;
    status.currentStep = 'completed';
    return result;
  } catch (err) {
    status.status = 'failed';
    return recordFailure(err, cancelReason, (reason) => steps.failRun(input, reason));
  }
}

/** Runs a sub-neuron as a child workflow on the same trace; its reply becomes the tool result. */
async function runDelegate(input: NeuronRunInput, delegate: { neuronId: string; version: number; name: string }, rawArgs: string): Promise<string> {
  let message = rawArgs;
  try {
    const parsed = JSON.parse(rawArgs) as { message?: unknown };
    if (typeof parsed.message === 'string') message = parsed.message;
  } catch { /* the raw text is the message */ }
  const childJobId = wf.uuid4();
  await steps.emitJobEvent(input.jobId, { type: 'delegate', neuron: delegate.name, child_job_id: childJobId });
  const child = await wf.executeChild(neuronRun, {
    workflowId: childJobId,
    args: [{ ...input, prepared: undefined, jobId: childJobId, neuronId: delegate.neuronId, neuronVersion: delegate.version, message, data: undefined, userEngramId: null, depth: input.depth + 1, parentJobId: input.jobId }],
    typedSearchAttributes: [
      { key: WorkspaceIdKey, value: input.scope.workspaceId }, { key: JobKindKey, value: 'neuron' },
      { key: NeuronIdKey, value: delegate.neuronId }, { key: TraceIdKey, value: input.traceId },
      ...(input.scope.brainId ? [{ key: BrainIdKey, value: input.scope.brainId }] : []),
    ],
  });
  return child.text;
}
