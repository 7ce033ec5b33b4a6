/**
 * The agent loop (workflows/runs/neuron-run.ts) with mocked activities (the frame is
 * test/workflows/mocked-worker.ts): a plain reply, a turn that calls a tool, a delegation to a
 * sub-neuron (a child neuronRun), the maxTurns cap, a budget pause (approve resumes, reject
 * fails) and a failing model turn. Each run's model turns follow the script its test sets.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import type { FinishInput, ModelTurnInput } from '../../src/runs/service.js';
import {
  answerUpdate,
  statusQuery,
  type BudgetPause,
  type ModelTurnOutcome,
  type NeuronRunInput,
  type NeuronRunResult,
  type RunSummary,
} from '../../src/temporal/definitions.js';
import { failureOf, recorder, until, useMockedWorker, waitFor } from './mocked-worker.js';

type Mocked = Pick<
  Activities,
  | 'prepareRun'
  | 'adoptFirstTurn'
  | 'modelTurn'
  | 'runTool'
  | 'finishRun'
  | 'failRun'
  | 'openBudgetPause'
  | 'recordBudgetAnswer'
  | 'emitJobEvent'
>;
const { callsOf, record } = recorder<keyof Mocked>();

const BUDGET: BudgetPause = {
  budgetId: 'budget-1',
  scope: 'neuron',
  targetId: 'neuron-1',
  measure: 'tokens',
  period: 'day',
  limit: 100,
  spent: 100,
  policy: 'pause',
  message: 'BUDGET_EXCEEDED: the neuron spent its daily tokens',
};

/** A model turn's outcome: a reply (tool calls or none), or the budget that stopped it. */
const reply = (toolCalls: ModelTurnOutcome['toolCalls'] = []): ModelTurnOutcome => ({
  attempt: 1,
  toolCalls,
  usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
  costUsd: 0.5,
  finishReason: toolCalls.length ? 'tool_calls' : 'stop',
  textChars: 4,
});
const stopped = (): ModelTurnOutcome => ({ ...reply(), finishReason: 'budget', budget: BUDGET });
const calculator = { id: 'call-1', name: 'calculator', arguments: '{"expression":"6 * 7"}' };

/** The script of a run's turns (by job id); a run without one (a delegated child) replies at once. */
type Script = (t: ModelTurnInput) => ModelTurnOutcome;
const scripts = new Map<string, Script>();
/** The run summary prepareRun returns (by job id); a plain text neuron without delegates when unset. */
const summaries = new Map<string, RunSummary>();
const plain: RunSummary = {
  model: 'test/model',
  neuronName: 'lead',
  neuronType: null,
  responseFormat: 'text',
  delegates: [],
};

const mocks: Mocked = {
  prepareRun: record('prepareRun', async (input) => summaries.get(input.jobId) ?? plain),
  adoptFirstTurn: record('adoptFirstTurn', async () => null),
  modelTurn: record('modelTurn', async (t) => (scripts.get(t.jobId) ?? (() => reply()))(t)),
  runTool: record('runTool', async (_jobId, call) => `result of ${call.name}`),
  finishRun: record('finishRun', async (f) => {
    const result: NeuronRunResult = {
      text: `reply of ${f.input.jobId}`,
      engramId: f.engramId,
      traceId: f.input.traceId,
      model: f.model,
      usage: f.usage,
      toolCalls: [],
      turns: f.turns,
    };
    return result;
  }),
  failRun: record('failRun', async () => undefined),
  openBudgetPause: record('openBudgetPause', async (_input, p) => ({
    type: 'intervention',
    interventionId: p.id,
    kind: 'budget',
    turn: p.turn,
  })),
  recordBudgetAnswer: record('recordBudgetAnswer', async (_input, a) =>
    a.action === 'approve' ? 'approved' : 'rejected',
  ),
  emitJobEvent: record('emitJobEvent', async () => undefined),
};

const worker = useMockedWorker('neuron-run', mocks);

async function start(script?: Script, opts: { maxTurns?: number; summary?: RunSummary } = {}) {
  const input: NeuronRunInput = {
    jobId: `neuron-run-${randomUUID()}`,
    scope: { workspaceId: 'ws-test', userId: null, apiKeyId: null, roles: ['admin'], credential: 'test' },
    neuronId: 'neuron-1',
    neuronVersion: 3,
    traceId: `trace-${randomUUID()}`,
    traceType: 'thread',
    message: 'hello',
    userEngramId: null,
    depth: 0,
    maxTurns: opts.maxTurns ?? 8,
    pathwayContext: null,
  };
  if (script) scripts.set(input.jobId, script);
  if (opts.summary) summaries.set(input.jobId, opts.summary);
  const handle = await worker.start('neuronRun', input.jobId, input);
  return { handle, id: input.jobId, input, result: () => handle.result() as Promise<NeuronRunResult> };
}

const turnsOf = (id: string) => callsOf(id, 'modelTurn').map((c) => c.args[0] as ModelTurnInput);
const finishOf = (id: string) => callsOf(id, 'finishRun').map((c) => c.args[0] as FinishInput);

describe('neuronRun (mocked activities)', () => {
  it('a plain reply: prepare, one model turn, finish with its figures', async () => {
    const s = await start();
    const result = await s.result();
    expect(callsOf(s.id, 'prepareRun').map((c) => c.args[0])).toEqual([s.input]);
    // Prepared by an activity (not the API): no first-turn adoption, the turn carries no start.
    expect(callsOf(s.id, 'adoptFirstTurn')).toEqual([]);
    expect(turnsOf(s.id)).toEqual([{ jobId: s.id, workspaceId: 'ws-test', turn: 0, accepted: [] }]);
    const [finish] = finishOf(s.id);
    expect(finish).toMatchObject({
      input: s.input,
      model: 'test/model',
      turns: 1,
      accepted: [1],
      usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5, costUsd: 0.5 },
      neuronType: null,
    });
    expect(result).toMatchObject({ text: `reply of ${s.id}`, engramId: finish.engramId, turns: 1 });
    expect(callsOf(s.id, 'runTool')).toEqual([]);
    expect(callsOf(s.id, 'failRun')).toEqual([]);
  });

  it('a turn that calls a tool: the tool runs, then the next turn reads it, and usage adds up', async () => {
    const s = await start((t) => (t.turn === 0 ? reply([calculator]) : reply()));
    await s.result();
    expect(callsOf(s.id, 'runTool').map((c) => c.args)).toEqual([[s.id, calculator, 0]]);
    expect(turnsOf(s.id).map((t) => [t.turn, t.accepted])).toEqual([
      [0, []],
      [1, [1]],
    ]);
    expect(finishOf(s.id)[0]).toMatchObject({
      turns: 2,
      accepted: [1, 1],
      usage: { inputTokens: 6, outputTokens: 4, totalTokens: 10, costUsd: 1 },
    });
  });

  it('a delegate_* call runs the sub-neuron as a child run on the same trace; its reply is the tool result', async () => {
    const summary: RunSummary = {
      ...plain,
      delegates: [{ tool: 'delegate_helper', neuronId: 'neuron-2', version: 5, name: 'helper' }],
    };
    const call = { id: 'call-9', name: 'delegate_helper', arguments: '{"message":"help me"}' };
    const s = await start((t) => (t.turn === 0 ? reply([call]) : reply()), { summary });
    await s.result();
    expect(callsOf(s.id, 'runTool')).toEqual([]);
    const [delegated] = callsOf(s.id, 'emitJobEvent').map((c) => c.args[1] as { type: string; child_job_id: string });
    expect(delegated).toMatchObject({ type: 'delegate', neuron: 'helper' });
    const child = callsOf(delegated.child_job_id, 'prepareRun').map((c) => c.args[0] as NeuronRunInput);
    expect(child).toHaveLength(1);
    expect(child[0]).toMatchObject({
      neuronId: 'neuron-2',
      neuronVersion: 5,
      message: 'help me',
      traceId: s.input.traceId,
      depth: 1,
      parentJobId: s.id,
      rootJobId: s.id,
      answers: { jobId: s.id, turn: 0, callId: 'call-9', name: 'delegate_helper' },
    });
    expect(finishOf(delegated.child_job_id)).toHaveLength(1);
    expect(finishOf(s.id)[0]).toMatchObject({ turns: 2, accepted: [1, 1] });
  });

  it('a model that keeps calling tools stops at maxTurns', async () => {
    const s = await start(() => reply([calculator]), { maxTurns: 2 });
    await s.result();
    expect(turnsOf(s.id).map((t) => t.turn)).toEqual([0, 1]);
    expect(callsOf(s.id, 'runTool').map((c) => c.args[2])).toEqual([0, 1]);
    expect(finishOf(s.id)[0]).toMatchObject({ turns: 2, accepted: [1, 1] });
  });

  it('a budget stops a turn: the run waits for an admin; approve runs the same turn beyond that budget', async () => {
    const s = await start((t) => (t.approvedBudgets?.includes(BUDGET.budgetId) ? reply() : stopped()));
    const opened = await waitFor('the budget pause', () => callsOf(s.id, 'openBudgetPause')[0]);
    const pause = opened.args[1] as { id: string; turn: number; budget: BudgetPause; currentStep: string };
    expect(pause).toMatchObject({ turn: 0, budget: BUDGET, currentStep: 'model turn 1: waiting for budget approval' });
    const live = await until(
      () => s.handle.query(statusQuery),
      (v) => v.status === 'waiting',
    );
    expect(live.waitingFor).toMatchObject({ interventionId: pause.id, kind: 'budget' });
    expect(finishOf(s.id)).toEqual([]);
    await expect(
      s.handle.executeUpdate(answerUpdate, { args: [{ interventionId: pause.id, action: 'maybe' }] }),
    ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    const accepted = await s.handle.executeUpdate(answerUpdate, {
      args: [{ interventionId: pause.id, action: 'approve' }],
    });
    expect(accepted).toEqual({ interventionId: pause.id, status: 'approved' });
    await s.result();
    expect(turnsOf(s.id).map((t) => [t.turn, t.approvedBudgets])).toEqual([
      [0, undefined],
      [0, ['budget-1']],
    ]);
    expect(callsOf(s.id, 'recordBudgetAnswer').map((c) => (c.args[1] as { action: string }).action)).toEqual([
      'approve',
    ]);
    expect(finishOf(s.id)[0]).toMatchObject({ turns: 1, accepted: [1] });
    expect((await s.handle.query(statusQuery)).status).toBe('completed');
  });

  it('a budget pause an admin rejects fails the run BUDGET_EXCEEDED after the answer is recorded', async () => {
    const s = await start(() => stopped());
    const opened = await waitFor('the budget pause', () => callsOf(s.id, 'openBudgetPause')[0]);
    const { id } = opened.args[1] as { id: string };
    // The run accepts answers once it waits (after the pause is opened).
    await until(
      () => s.handle.query(statusQuery),
      (v) => v.status === 'waiting',
    );
    await s.handle.executeUpdate(answerUpdate, { args: [{ interventionId: id, action: 'reject' }] });
    const cause = await failureOf(s.handle);
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('BUDGET_EXCEEDED');
    expect(turnsOf(s.id)).toHaveLength(1);
    const names = callsOf(s.id).map((c) => c.name);
    expect(names.indexOf('recordBudgetAnswer')).toBeGreaterThan(-1);
    expect(names.indexOf('recordBudgetAnswer')).toBeLessThan(names.indexOf('failRun'));
    expect(callsOf(s.id, 'failRun').map((c) => c.args[1])).toEqual([
      `${BUDGET.message}; an admin declined to go beyond it`,
    ]);
    expect(finishOf(s.id)).toEqual([]);
  });

  it('a model turn that fails for good fails the run, recording the model’s own message', async () => {
    const s = await start(() => {
      throw ApplicationFailure.nonRetryable('model refused the request', 'MODEL_4XX');
    });
    const cause = await failureOf(s.handle);
    expect(cause).toBeInstanceOf(Error);
    expect(callsOf(s.id, 'modelTurn').map((c) => c.attempt)).toEqual([1]);
    expect(callsOf(s.id, 'failRun').map((c) => c.args)).toEqual([[s.input, 'model refused the request']]);
    expect(finishOf(s.id)).toEqual([]);
  });

  it('model fallbacks: a model failure goes to the next model; later turns start there; the reply names it', async () => {
    const summary: RunSummary = { ...plain, model: 'test/a', fallbackModels: ['test/b', 'test/c'] };
    const s = await start(
      (t) => {
        if (!t.modelIndex) throw ApplicationFailure.nonRetryable('test/a: 404 no such model', 'LLM_ERROR');
        return { ...reply(t.turn === 0 ? [calculator] : []), model: 'test/b', attempt: 2 };
      },
      { summary },
    );
    const result = await s.result();
    expect(result.model).toBe('test/b');
    // Turn 0: model 0 once (a non-retryable failure), then model 1; turn 1 asks model 1 straight away.
    expect(turnsOf(s.id).map((t) => [t.turn, t.modelIndex ?? 0])).toEqual([
      [0, 0],
      [0, 1],
      [1, 1],
    ]);
    expect(finishOf(s.id).map((f) => [f.model, f.accepted])).toEqual([['test/b', [2, 2]]]);
  });

  it('model fallbacks: a retryable failure is retried first; when every model fails the run fails with each error', async () => {
    const summary: RunSummary = { ...plain, model: 'test/a', fallbackModels: ['test/b'] };
    const s = await start(
      (t) => {
        if (!t.modelIndex) throw ApplicationFailure.retryable('test/a: 503 overloaded', 'LlmError');
        throw ApplicationFailure.nonRetryable('test/b: 401 bad key', 'LLM_ERROR');
      },
      { summary },
    );
    const cause = await failureOf(s.handle);
    expect((cause as ApplicationFailure).type).toBe('ALL_MODELS_FAILED');
    // Model 0 had its retries (3 attempts before a fallback), model 1 failed for good at once.
    expect(callsOf(s.id, 'modelTurn').map((c) => [(c.args[0] as ModelTurnInput).modelIndex ?? 0, c.attempt])).toEqual([
      [0, 1],
      [0, 2],
      [0, 3],
      [1, 1],
    ]);
    expect(callsOf(s.id, 'failRun').map((c) => c.args[1])).toEqual([
      'every model failed: test/a: test/a: 503 overloaded; test/b: test/b: 401 bad key',
    ]);
    expect(finishOf(s.id)).toEqual([]);
  }, 30_000);

  it('model fallbacks: a failure that is not the model’s (a budget, a tool) does not move to the next model', async () => {
    const summary: RunSummary = { ...plain, model: 'test/a', fallbackModels: ['test/b'] };
    const s = await start(
      () => {
        throw ApplicationFailure.nonRetryable('BUDGET_EXCEEDED: spent', 'BUDGET_EXCEEDED');
      },
      { summary },
    );
    await failureOf(s.handle);
    expect(turnsOf(s.id)).toHaveLength(1);
    expect(callsOf(s.id, 'failRun').map((c) => c.args[1])).toEqual(['BUDGET_EXCEEDED: spent']);
  });
});
