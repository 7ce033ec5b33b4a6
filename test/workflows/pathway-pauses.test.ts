/**
 * The pathway interpreter (workflows/pathways/pathway-run.ts) where a run stops or is stopped, with mocked
 * activities (the frame is test/workflows/mocked-worker.ts): a classify node's budget pause
 * (approve resumes, reject fails), a pause node (resumed by the `answer` Update or the legacy
 * `resume` signal), cancellation while waiting, and the maxSteps cap on node visits.
 */
import { randomUUID } from 'node:crypto';
import { CancelledFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import {
  answerUpdate,
  cancelSignal,
  resumeSignal,
  statusQuery,
  type BudgetPause,
  type PathwayRunInput,
  type PathwayRunResult,
  type RunGraph,
} from '../../src/temporal/definitions.js';
import {
  expressionsOf,
  failureOf,
  pathwayStepMocks,
  recorder,
  until,
  useMockedWorker,
  waitFor,
  type PathwayStepActivities,
} from './mocked-worker.js';

type Mocked = PathwayStepActivities & Pick<Activities, 'classify'>;
const { callsOf, record } = recorder<keyof Mocked>();

/** The expressions the graphs use, as JavaScript over the run context (the real activity evaluates JSONata). */
const evaluate = expressionsOf<{ last: unknown }>(
  {
    true: () => true,
    'last + 1': (c) => Number(c.last) + 1,
  },
  (m) => ApplicationFailure.nonRetryable(m, 'VALIDATION'),
);

/** The budget the classify mock stops on until the run has it approved. */
const BUDGET: BudgetPause = {
  budgetId: 'budget-1',
  scope: 'workspace',
  targetId: null,
  measure: 'cost',
  period: 'month',
  limit: 1,
  spent: 1,
  policy: 'pause',
  message: 'BUDGET_EXCEEDED: the workspace spent its monthly budget',
};

const mocks: Mocked = {
  ...pathwayStepMocks(record, evaluate),
  classify: record('classify', async (a) =>
    a.approvedBudgets?.includes(BUDGET.budgetId) ? 'billing' : { budget: BUDGET },
  ),
};

const worker = useMockedWorker('pathway-pauses', mocks);

async function start(graph: RunGraph, maxSteps = 50) {
  const args: PathwayRunInput = {
    jobId: `pathway-pauses-${randomUUID()}`,
    scope: { workspaceId: 'ws-test', userId: null, apiKeyId: null, roles: ['admin'], credential: 'test' },
    pathwayId: null,
    pathwayVersion: null,
    traceId: `trace-${randomUUID()}`,
    input: { text: 'my invoice' },
    graph,
    maxSteps,
  };
  const handle = await worker.start('pathwayRun', args.jobId, args);
  return { handle, id: args.jobId, args, result: () => handle.result() as Promise<PathwayRunResult> };
}

/** The intervention a run opened (waits for the openIntervention call), and the run's status once it waits there. */
async function opened(s: Awaited<ReturnType<typeof start>>, state: 'waiting' | 'paused') {
  const call = await waitFor('the intervention', () => callsOf(s.id, 'openIntervention')[0]);
  const spec = call.args[1] as { id: string; kind: string; options: string[]; nodeIndex: number; title: string };
  const live = await until(
    () => s.handle.query(statusQuery),
    (v) => v.status === state,
  );
  return { spec, live };
}

const classifyGraph: RunGraph = {
  nodes: [
    { type: 'start', data: {} },
    { type: 'classify', data: { categories: ['billing', 'tech'] } },
    { type: 'output', data: {} },
  ],
  edges: [
    [0, 1],
    [1, 2, 'billing'],
    [1, 2, 'tech'],
  ],
};

const pauseGraph: RunGraph = {
  nodes: [
    { type: 'start', data: {} },
    { type: 'human', data: { pause: true, title: 'Hold on' } },
    { type: 'output', data: {} },
  ],
  edges: [
    [0, 1],
    [1, 2],
  ],
};

describe('pathwayRun pauses, cancellation and the step cap (mocked activities)', () => {
  it('a budget stops classify: the run waits for an admin, approve asks again beyond that budget', async () => {
    const s = await start(classifyGraph);
    const { spec, live } = await opened(s, 'waiting');
    expect(spec).toMatchObject({
      kind: 'budget',
      options: ['approve', 'reject'],
      nodeIndex: 1,
      title: 'Budget reached',
    });
    expect(live.currentStep).toBe('node 1 (classify): waiting for budget approval');
    expect(live.waitingFor).toMatchObject({ interventionId: spec.id, kind: 'budget' });
    // Asked once, without approvals; nothing after the node ran.
    expect(callsOf(s.id, 'classify').map((c) => (c.args[0] as { approvedBudgets?: string[] }).approvedBudgets)).toEqual(
      [undefined],
    );
    expect(callsOf(s.id, 'finishPathwayRun')).toEqual([]);
    // The pause only takes approve or reject.
    await expect(
      s.handle.executeUpdate(answerUpdate, { args: [{ interventionId: spec.id, action: 'resume' }] }),
    ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    const accepted = await s.handle.executeUpdate(answerUpdate, {
      args: [{ interventionId: spec.id, action: 'approve' }],
    });
    expect(accepted).toEqual({ interventionId: spec.id, status: 'approved' });
    const result = await s.result();
    expect(result.output).toEqual({ category: 'billing', input: '{"text":"my invoice"}' });
    expect(result.visited).toEqual(['0', '1', '2']);
    // The same node asked again, now beyond the approved budget; the answer was recorded as a budget's.
    expect(callsOf(s.id, 'classify').map((c) => (c.args[0] as { approvedBudgets?: string[] }).approvedBudgets)).toEqual(
      [undefined, ['budget-1']],
    );
    expect(callsOf(s.id, 'recordAnswer').map((c) => c.args[2])).toEqual(['budget']);
    const answered = callsOf(s.id, 'pathwayNodeEvent').map((c) => c.args[1] as { type: string; action?: string });
    expect(answered).toEqual([{ type: 'intervention_answered', intervention_id: spec.id, action: 'approve' }]);
    expect(callsOf(s.id, 'failPathwayRun')).toEqual([]);
  });

  it('a budget pause an admin rejects fails the run BUDGET_EXCEEDED, after the answer is recorded', async () => {
    const s = await start(classifyGraph);
    const { spec } = await opened(s, 'waiting');
    await s.handle.executeUpdate(answerUpdate, { args: [{ interventionId: spec.id, action: 'reject' }] });
    const cause = await failureOf(s.handle);
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('BUDGET_EXCEEDED');
    expect(callsOf(s.id, 'classify')).toHaveLength(1);
    expect(callsOf(s.id, 'finishPathwayRun')).toEqual([]);
    const names = callsOf(s.id).map((c) => c.name);
    expect(names.indexOf('recordAnswer')).toBeGreaterThan(-1);
    expect(names.indexOf('recordAnswer')).toBeLessThan(names.indexOf('failPathwayRun'));
    expect(callsOf(s.id, 'failPathwayRun').map((c) => c.args[1])).toEqual([
      `${BUDGET.message}; an admin declined to go beyond it`,
    ]);
  });

  it('a pause node pauses the run until the resume answer; other actions are refused', async () => {
    const s = await start(pauseGraph);
    const { spec, live } = await opened(s, 'paused');
    expect(spec).toMatchObject({ kind: 'pause', options: ['resume'], title: 'Hold on', nodeIndex: 1 });
    expect(live.currentStep).toBe('node 1 (human): paused');
    await expect(
      s.handle.executeUpdate(answerUpdate, { args: [{ interventionId: spec.id, action: 'approve' }] }),
    ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    expect(callsOf(s.id, 'finishPathwayRun')).toEqual([]);
    const accepted = await s.handle.executeUpdate(answerUpdate, {
      args: [{ interventionId: spec.id, action: 'resume', by: 'tester' }],
    });
    expect(accepted).toEqual({ interventionId: spec.id, status: 'answered' });
    // A second answer is refused: the intervention is taken (or the run has already ended).
    await expect(
      s.handle.executeUpdate(answerUpdate, { args: [{ interventionId: spec.id, action: 'resume' }] }),
    ).rejects.toThrow();
    const result = await s.result();
    expect(result.visited).toEqual(['0', '1', '2']);
    expect(result.nodes['1']).toEqual({ action: 'resume', comment: null, fields: null, by: 'tester' });
    expect(callsOf(s.id, 'recordAnswer').map((c) => c.args[2])).toEqual(['pause']);
  });

  it('a paused run also continues on the legacy resume signal (histories recorded before answers were Updates)', async () => {
    const s = await start(pauseGraph);
    await opened(s, 'paused');
    await s.handle.signal(resumeSignal, {});
    const result = await s.result();
    expect(result.visited).toEqual(['0', '1', '2']);
    expect(result.nodes['1']).toMatchObject({ action: 'resume', by: null });
    // The signal is not an Update: nothing records an answer.
    expect(callsOf(s.id, 'recordAnswer')).toEqual([]);
    expect(callsOf(s.id, 'finishPathwayRun')).toHaveLength(1);
  });

  it('a run cancelled while it waits ends cancelled, records why, and refuses a late answer', async () => {
    const s = await start(pauseGraph);
    const { spec } = await opened(s, 'paused');
    await s.handle.signal(cancelSignal, { reason: 'the user stopped it' });
    await s.handle.cancel();
    const cause = await failureOf(s.handle);
    expect(cause).toBeInstanceOf(CancelledFailure);
    expect(callsOf(s.id, 'failPathwayRun').map((c) => c.args[1])).toEqual(['cancelled: the user stopped it']);
    expect(callsOf(s.id, 'finishPathwayRun')).toEqual([]);
    expect(callsOf(s.id, 'recordAnswer')).toEqual([]);
    await expect(
      s.handle.executeUpdate(answerUpdate, { args: [{ interventionId: spec.id, action: 'resume' }] }),
    ).rejects.toThrow();
  });

  it('a graph that loops past maxSteps node visits fails MAX_STEPS after exactly that many visits', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'while', data: { condition: 'true', max_iterations: 1000 } },
        { type: 'transform', data: { expression: 'last + 1' } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2, 'body'],
        [2, 1],
        [1, 3, 'done'],
      ],
    };
    const s = await start(graph, 7);
    const cause = await failureOf(s.handle);
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('MAX_STEPS');
    expect(callsOf(s.id, 'failPathwayRun').map((c) => c.args[1])).toEqual(['pathway exceeded 7 node visits']);
    // Seven nodes started (0, then the loop 1, 2 three times), none after.
    const starts = callsOf(s.id, 'pathwayStep').flatMap((c) =>
      (c.args[0] as { events: { type: string; node: number }[] }).events
        .filter((e) => e.type === 'node_start')
        .map((e) => e.node),
    );
    expect(starts).toEqual(['0', '1', '2', '1', '2', '1', '2']);
    expect(callsOf(s.id, 'evaluate')).toHaveLength(3);
    expect(callsOf(s.id, 'finishPathwayRun')).toEqual([]);
  });
});
