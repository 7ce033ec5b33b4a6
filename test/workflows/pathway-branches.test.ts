/**
 * The pathway interpreter (workflows/pathways/pathway-run.ts) branch by branch, without the platform: no
 * API, no stores, no real activities. A Temporal Worker on its own task queue runs the prebuilt
 * workflow bundle (test/support/global-setup.ts) with a plain object of mocked activities that
 * record every call, so each test asserts both the run's result and what the workflow asked for.
 *
 * Temporal: the real dev server the integration setup starts (inject('temporalAddress')), not
 * the time-skipping test server: @temporalio/testing is not installed here and its server is a
 * binary downloaded from outside the reachable registries. So timers really elapse; the graphs
 * keep delays and expiries at 1 s.
 *
 * Neuron nodes run `neuronRun` as a child workflow on the same task queue: its activities
 * (prepareRun, modelTurn, finishRun, failRun) are mocked here too.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import {
  answerUpdate,
  statusQuery,
  type NeuronRunInput,
  type NeuronRunResult,
  type PathwayRunInput,
  type PathwayRunResult,
  type RunGraph,
} from '../../src/temporal/definitions.js';
import {
  expressionsOf,
  pathwayStepMocks,
  recorder,
  useMockedWorker,
  type PathwayStepActivities,
} from './mocked-worker.js';

/** The activities pathwayRun (and its neuronRun child) calls; each mock below implements one. */
type Mocked = PathwayStepActivities &
  Pick<Activities, 'classify' | 'neuronVersion' | 'prepareRun' | 'modelTurn' | 'finishRun' | 'failRun'>;
const { calls, callsOf, record } = recorder<keyof Mocked>();

/**
 * The expressions the graphs below use, as JavaScript over the run context (the real activity
 * evaluates JSONata; here the interpreter's wiring is under test, not the expression language).
 * An expression not listed fails the node as the real one does: a non-retryable failure.
 */
type Ctx = {
  input: Record<string, unknown>;
  last: unknown;
  nodes: Record<string, unknown>;
  loops: Record<string, number>;
};
const EXPRESSIONS: Record<string, (c: Ctx) => unknown> = {
  'input.n * 2': (c) => Number(c.input.n) * 2,
  // A node's value by its id and by its index (graphs written before ids were kept).
  'nodes.double + nodes.`1`': (c) => {
    const nodes = (c as unknown as { nodes: Record<string, number> }).nodes;
    return nodes.double + nodes['1'];
  },
  'last + 1': (c) => Number(c.last) + 1,
  'last > 10': (c) => Number(c.last) > 10,
  'last.n < 3': (c) => Number((c.last as { n: number }).n) < 3,
  '{ "n": last.n + 1 }': (c) => ({ n: Number((c.last as { n: number }).n) + 1 }),
  '"big"': () => 'big',
  '"small"': () => 'small',
  '"approved"': () => 'approved',
  '"rejected"': () => 'rejected',
  '"B"': () => 'B',
  '"T"': () => 'T',
};
const evaluate = expressionsOf<Ctx>(EXPRESSIONS, (m) => ApplicationFailure.nonRetryable(m, 'VALIDATION'));

/** Test-controlled behaviour of the model-facing mocks (set by a test, reset in its own body). */
const behaviour: { classifyFailsFirst: boolean; modelTurnFails: boolean } = {
  classifyFailsFirst: false,
  modelTurnFails: false,
};

const mocks: Mocked = {
  ...pathwayStepMocks(record, evaluate),
  classify: record('classify', async (a) => {
    if (behaviour.classifyFailsFirst && Context.current().info.attempt === 1)
      throw new Error('model provider unavailable'); // retryable: the workflow's retry policy runs it again
    return a.text.includes('invoice') ? 'billing' : 'tech';
  }),
  neuronVersion: record('neuronVersion', async () => 7),
  prepareRun: record('prepareRun', async () => ({
    model: 'test/model',
    neuronName: 'helper',
    neuronType: null,
    responseFormat: 'text' as const,
    delegates: [],
  })),
  modelTurn: record('modelTurn', async () => {
    if (behaviour.modelTurnFails) throw ApplicationFailure.nonRetryable('model refused the request', 'MODEL_4XX');
    return {
      attempt: 1,
      toolCalls: [],
      usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
      costUsd: 0,
      finishReason: 'stop',
      textChars: 8,
    };
  }),
  finishRun: record('finishRun', async (f) => {
    const result: NeuronRunResult = {
      text: `reply to ${f.input.message ?? ''}`,
      engramId: f.engramId,
      traceId: f.input.traceId,
      model: f.model,
      usage: { ...f.usage, costUsd: f.usage.costUsd },
      toolCalls: [],
      turns: f.turns,
    };
    return result;
  }),
  failRun: record('failRun', async () => undefined as never),
};

const worker = useMockedWorker('pathway-branches', mocks);

function runInput(graph: RunGraph, input: Record<string, unknown> = {}): PathwayRunInput {
  return {
    jobId: `pathway-branches-${randomUUID()}`,
    scope: { workspaceId: 'ws-test', userId: null, apiKeyId: null, roles: ['admin'], credential: 'test' },
    pathwayId: null,
    pathwayVersion: null,
    traceId: `trace-${randomUUID()}`,
    input,
    graph,
    maxSteps: 50,
  };
}

/** Starts pathwayRun with the job id as its workflow id (as the API does). */
async function start(graph: RunGraph, input?: Record<string, unknown>) {
  const args = runInput(graph, input);
  const handle = await worker.start('pathwayRun', args.jobId, args);
  return { handle, id: args.jobId, args };
}
const run = async (graph: RunGraph, input?: Record<string, unknown>) => {
  const s = await start(graph, input);
  return { ...s, result: (await s.handle.result()) as PathwayRunResult };
};

async function waitFor<T>(what: string, probe: () => T | undefined, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The node_start entries a run sent, in order: the node indices it visited, as its stream shows them. */
const streamedStarts = (workflowId: string) =>
  callsOf(workflowId, 'pathwayStep').flatMap((c) =>
    (c.args[0] as { events: { type: string; node: string }[] }).events
      .filter((e) => e.type === 'node_start')
      .map((e) => e.node),
  );

/** The failure the run ended with: WorkflowFailedError → (Activity|ChildWorkflow)Failure → root ApplicationFailure. */
async function failureOf(handle: { result(): Promise<PathwayRunResult> }) {
  const err = await handle.result().then(
    () => {
      throw new Error('the run completed; it was expected to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return (err as WorkflowFailedError).cause;
}

describe('pathwayRun branches (mocked activities)', () => {
  it('start → transform → output: the output is the transform result, and the run reports start and finish', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'transform', data: { expression: 'input.n * 2' } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2],
      ],
    };
    const { id, args, result } = await run(graph, { n: 21 });
    expect(result.output).toBe(42);
    expect(result.visited).toEqual(['0', '1', '2']);
    expect(result.nodes).toEqual({ '0': { n: 21 }, '1': 42, '2': 42 });
    // The transform was evaluated once, fused with its stream entries, over the run's context.
    const evaluated = callsOf(id, 'pathwayStep').filter((c) => (c.args[0] as { evaluate?: unknown }).evaluate);
    expect(evaluated).toHaveLength(1);
    expect((evaluated[0].args[0] as { evaluate: unknown }).evaluate).toEqual({
      expression: 'input.n * 2',
      template: undefined,
      context: { input: { n: 21 }, last: { n: 21 }, nodes: { '0': { n: 21 } }, loops: {} },
    });
    expect(streamedStarts(id)).toEqual(['0', '1', '2']);
    expect(callsOf(id, 'startPathwayRun').map((c) => c.args[0])).toEqual([args]);
    const finished = callsOf(id, 'finishPathwayRun');
    expect(finished).toHaveLength(1);
    expect(finished[0].args[1]).toEqual(result);
    expect(callsOf(id, 'failPathwayRun')).toEqual([]);
  });

  it("a graph with the designer's node ids: the stream, visited, nodes and current_step name them", async () => {
    const graph: RunGraph = {
      nodes: [
        { id: 'begin', type: 'start', data: {} },
        { id: 'double', type: 'transform', data: { expression: 'input.n * 2' } },
        { id: 'done', type: 'output', data: { value: 'nodes.double + nodes.`1`' } },
      ],
      edges: [
        [0, 1],
        [1, 2],
      ],
    };
    const { id, result } = await run(graph, { n: 21 });
    expect(result.visited).toEqual(['begin', 'double', 'done']);
    expect(streamedStarts(id)).toEqual(['begin', 'double', 'done']);
    // Expressions read a node's value by its id, and by its index as graphs written before ids did.
    expect(result.output).toBe(84);
    expect(result.nodes).toEqual({ begin: { n: 21 }, double: 42, done: 84 });
  });

  it('if takes the true branch for one input and the false branch for another', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'transform', data: { expression: 'input.n * 2' } },
        { type: 'if', data: { condition: 'last > 10' } },
        { type: 'output', data: { value: '"big"' } },
        { type: 'output', data: { value: '"small"' } },
      ],
      edges: [
        [0, 1],
        [1, 2],
        [2, 3, 'true'],
        [2, 4, 'false'],
      ],
    };
    const [big, small] = await Promise.all([run(graph, { n: 6 }), run(graph, { n: 5 })]);
    expect(big.result.output).toBe('big');
    expect(big.result.visited).toEqual(['0', '1', '2', '3']);
    expect(small.result.output).toBe('small');
    expect(small.result.visited).toEqual(['0', '1', '2', '4']);
    // The if node's node_finish names the handle it took (sent with the next node's entries).
    const handles = (id: string) =>
      callsOf(id, 'pathwayStep').flatMap((c) =>
        (c.args[0] as { events: { type: string; node: string; handle?: string }[] }).events
          .filter((e) => e.type === 'node_finish' && e.node === '2')
          .map((e) => e.handle),
      );
    expect(handles(big.id)).toEqual(['true']);
    expect(handles(small.id)).toEqual(['false']);
  });

  it('while runs its body until the condition is false, then leaves by done with the iteration count', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'while', data: { condition: 'last.n < 3', max_iterations: 10 } },
        { type: 'transform', data: { expression: '{ "n": last.n + 1 }' } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2, 'body'],
        [2, 1],
        [1, 3, 'done'],
      ],
    };
    const { id, result } = await run(graph, { n: 0 });
    expect(result.output).toEqual({ iterations: 3, last: { n: 3 } });
    expect(result.visited).toEqual(['0', '1', '2', '1', '2', '1', '2', '1', '3']);
    // The condition was asked four times (three true, one false); the body ran three times.
    const conditions = callsOf(id, 'evaluate').map((c) => c.args[0] as { expression: string; context: Ctx });
    expect(conditions.map((c) => c.expression)).toEqual(Array(4).fill('last.n < 3'));
    expect(conditions.map((c) => (c.context.last as { n: number }).n)).toEqual([0, 1, 2, 3]);
    expect(conditions.map((c) => c.context.loops['1'] ?? 0)).toEqual([0, 1, 2, 3]);
  });

  it('while stops at max_iterations when its condition never turns false', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'while', data: { condition: 'last.n < 3', max_iterations: 2 } },
        { type: 'transform', data: { expression: '{ "n": last.n + 1 }' } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2, 'body'],
        [2, 1],
        [1, 3, 'done'],
      ],
    };
    const { id, result } = await run(graph, { n: -10 });
    expect(result.output).toEqual({ iterations: 2, last: { n: -8 } });
    // At the cap the condition is not even asked.
    expect(callsOf(id, 'evaluate')).toHaveLength(2);
  });

  it('delay waits on a durable timer of the given length before the next node', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'delay', data: { seconds: 1 } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2],
      ],
    };
    const began = Date.now();
    const { handle, result } = await run(graph, { n: 1 });
    const took = Date.now() - began;
    expect(took).toBeGreaterThanOrEqual(900);
    expect(result.output).toEqual({ n: 1 }); // a delay passes its input through
    const { events } = await handle.fetchHistory();
    const timers = (events ?? []).filter((e) => e.timerStartedEventAttributes);
    expect(timers).toHaveLength(1);
    expect(Number(timers[0].timerStartedEventAttributes!.startToFireTimeout!.seconds)).toBe(1);
    expect((events ?? []).some((e) => e.timerFiredEventAttributes)).toBe(true);
  });

  it('neuron runs neuronRun as a child workflow with the rendered message; its reply is the node value', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'neuron', data: { neuron_id: 'neuron-1', message: 'summarize this' } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2],
      ],
    };
    const { id, args, result } = await run(graph, { n: 1 });
    expect(result.output).toBe('reply to summarize this');
    expect(callsOf(id, 'renderMessage').map((c) => (c.args[0] as { template?: string }).template)).toEqual([
      'summarize this',
    ]);
    // The version is asked for (the input pins none), then the child runs with it on the run's trace.
    expect(callsOf(id, 'neuronVersion').map((c) => c.args[1])).toEqual(['neuron-1']);
    const prepared = calls.filter(
      (c) => c.name === 'prepareRun' && (c.args[0] as NeuronRunInput).parentJobId === args.jobId,
    );
    expect(prepared).toHaveLength(1);
    const child = prepared[0].args[0] as NeuronRunInput;
    expect(child).toMatchObject({
      jobId: prepared[0].workflowId,
      neuronId: 'neuron-1',
      neuronVersion: 7,
      message: 'summarize this',
      traceId: args.traceId,
      rootJobId: args.jobId,
      pathwayContext: { pathwayId: 'inline', nodeIndex: 1 },
    });
    expect(callsOf(child.jobId, 'modelTurn')).toHaveLength(1);
    expect(callsOf(child.jobId, 'finishRun')).toHaveLength(1);
  });

  it('a failing neuron child fails the pathway run, which records the failure', async () => {
    behaviour.modelTurnFails = true;
    try {
      const graph: RunGraph = {
        nodes: [
          { type: 'start', data: {} },
          { type: 'neuron', data: { neuron_id: 'neuron-1' } },
          { type: 'output', data: {} },
        ],
        edges: [
          [0, 1],
          [1, 2],
        ],
      };
      const { id, handle, args } = await start({ ...graph }, { n: 1 });
      const cause = await failureOf(handle);
      expect(cause).toBeInstanceOf(ChildWorkflowFailure);
      const childId = String((cause as ChildWorkflowFailure).execution.workflowId);
      // The child recorded its own failure with the model's message.
      expect(callsOf(childId, 'failRun').map((c) => c.args[1])).toEqual(['model refused the request']);
      expect(callsOf(id, 'finishPathwayRun')).toEqual([]);
      const failed = callsOf(id, 'failPathwayRun');
      expect(failed).toHaveLength(1);
      expect(failed[0].args[0]).toEqual(args);
      // The pathway records the root cause: recordFailure unwraps the child's failure and the
      // activity failure inside it down to the model's own message.
      expect((cause as ChildWorkflowFailure).cause).toBeInstanceOf(ActivityFailure);
      expect(failed[0].args[1]).toBe('model refused the request');
    } finally {
      behaviour.modelTurnFails = false;
    }
  });

  it('classify routes to the edge of the category the model picked', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'classify', data: { categories: ['billing', 'tech'], input: undefined, model: 'test/model' } },
        { type: 'output', data: { value: '"B"' } },
        { type: 'output', data: { value: '"T"' } },
      ],
      edges: [
        [0, 1],
        [1, 2, 'billing'],
        [1, 3, 'tech'],
      ],
    };
    const [billing, tech] = await Promise.all([
      run(graph, { text: 'my invoice is wrong' }),
      run(graph, { text: 'the app crashes' }),
    ]);
    expect(billing.result.output).toBe('B');
    expect(billing.result.visited).toEqual(['0', '1', '2']);
    expect(billing.result.nodes['1']).toEqual({ category: 'billing', input: '{"text":"my invoice is wrong"}' });
    expect(tech.result.output).toBe('T');
    expect(tech.result.visited).toEqual(['0', '1', '3']);
    const asked = callsOf(billing.id, 'classify');
    expect(asked).toHaveLength(1);
    expect(asked[0].args[0]).toMatchObject({
      jobId: billing.id,
      categories: ['billing', 'tech'],
      text: '{"text":"my invoice is wrong"}',
      model: 'test/model',
    });
  });

  it('human waits for an answer (the Update), and approve and reject each take their branch', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'human', data: { title: 'Ship it?', prompt: 'Approve the release' } },
        { type: 'output', data: { value: '"approved"' } },
        { type: 'output', data: { value: '"rejected"' } },
      ],
      edges: [
        [0, 1],
        [1, 2, 'approve'],
        [1, 3, 'reject'],
      ],
    };
    const answer = async (action: 'approve' | 'reject') => {
      const { handle, id } = await start(graph, { n: 1 });
      const opened = await waitFor('the intervention', () => callsOf(id, 'openIntervention')[0]);
      const spec = opened.args[1] as { id: string; kind: string; options: string[]; title: string };
      expect(spec).toMatchObject({ kind: 'approval', options: ['approve', 'reject'], title: 'Ship it?', nodeIndex: 1 });
      // The run waits: its live status says so, and nothing after the human node ran.
      let live = await handle.query(statusQuery);
      for (let i = 0; live.status !== 'waiting' && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 50));
        live = await handle.query(statusQuery);
      }
      expect(live.status).toBe('waiting');
      expect(live.waitingFor).toMatchObject({ interventionId: spec.id, node: 1, options: ['approve', 'reject'] });
      expect(callsOf(id, 'finishPathwayRun')).toEqual([]);
      // An action the node does not offer is refused by the validator; nothing is recorded.
      await expect(
        handle.executeUpdate(answerUpdate, { args: [{ interventionId: spec.id, action: 'maybe' }] }),
      ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
      const accepted = await handle.executeUpdate(answerUpdate, {
        args: [{ interventionId: spec.id, action, comment: 'looked at it', by: 'tester' }],
      });
      expect(accepted).toEqual({ interventionId: spec.id, status: action === 'approve' ? 'approved' : 'rejected' });
      const result = await handle.result();
      expect(callsOf(id, 'recordAnswer').map((c) => [(c.args[1] as { action: string }).action, c.args[2]])).toEqual([
        [action, 'approval'],
      ]);
      return { id, result };
    };
    const [approved, rejected] = await Promise.all([answer('approve'), answer('reject')]);
    expect(approved.result.output).toBe('approved');
    expect(approved.result.visited).toEqual(['0', '1', '2']);
    expect(approved.result.nodes['1']).toEqual({
      action: 'approve',
      comment: 'looked at it',
      fields: null,
      by: 'tester',
    });
    expect(rejected.result.output).toBe('rejected');
    expect(rejected.result.visited).toEqual(['0', '1', '3']);
  });

  it('human with expires_in_s: unanswered, the intervention expires and the run fails INTERVENTION_EXPIRED', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'human', data: { title: 'quick', expires_in_s: 1 } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2],
      ],
    };
    const { handle, id } = await start(graph, { n: 1 });
    const cause = await failureOf(handle);
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('INTERVENTION_EXPIRED');
    const spec = callsOf(id, 'openIntervention')[0].args[1] as { id: string; expiresInS: number };
    expect(spec.expiresInS).toBe(1);
    expect(callsOf(id, 'expireIntervention').map((c) => c.args[1])).toEqual([spec.id]);
    expect(callsOf(id, 'failPathwayRun').map((c) => c.args[1])).toEqual([`intervention ${spec.id} expired`]);
    expect(callsOf(id, 'recordAnswer')).toEqual([]);
    expect(callsOf(id, 'finishPathwayRun')).toEqual([]);
  });

  it('a non-retryable activity failure ends the run failed with the activity’s own message recorded', async () => {
    const graph: RunGraph = {
      nodes: [
        { type: 'start', data: {} },
        { type: 'transform', data: { expression: 'no such expression' } },
        { type: 'output', data: {} },
      ],
      edges: [
        [0, 1],
        [1, 2],
      ],
    };
    const { handle, id, args } = await start(graph, { n: 1 });
    const cause = await failureOf(handle);
    // A local activity's failure reaches the client as the activity's own ApplicationFailure.
    const root = cause instanceof ActivityFailure ? cause.cause : cause;
    expect(root).toBeInstanceOf(ApplicationFailure);
    expect((root as ApplicationFailure).type).toBe('VALIDATION');
    expect((root as ApplicationFailure).nonRetryable).toBe(true);
    // Asked once (not retried), then the run recorded the activity's message, not the wrapper's.
    const evaluated = callsOf(id, 'pathwayStep').filter((c) => (c.args[0] as { evaluate?: unknown }).evaluate);
    expect(evaluated.map((c) => c.attempt)).toEqual([1]);
    expect(callsOf(id, 'failPathwayRun').map((c) => c.args.slice(0, 2))).toEqual([
      [args, 'expression "no such expression" failed: unknown'],
    ]);
    expect(callsOf(id, 'finishPathwayRun')).toEqual([]);
  });

  it('a retryable activity failure is retried by the workflow’s policy and the run then completes', async () => {
    behaviour.classifyFailsFirst = true;
    try {
      const graph: RunGraph = {
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
      const { id, result } = await run(graph, { text: 'invoice' });
      expect(result.output).toEqual({ category: 'billing', input: '{"text":"invoice"}' });
      expect(callsOf(id, 'classify').map((c) => c.attempt)).toEqual([1, 2]);
      expect(callsOf(id, 'failPathwayRun')).toEqual([]);
    } finally {
      behaviour.classifyFailsFirst = false;
    }
  });
});
