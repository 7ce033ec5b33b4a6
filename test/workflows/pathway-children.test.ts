/**
 * The pathway interpreter's child-run nodes (pathway and map) without the platform: a Temporal
 * Worker on its own task queue runs the prebuilt workflow bundle over mocked activities that record
 * every call (test/workflows/mocked-worker.ts). Expressions and the map's item rendering are the
 * real ones (JSONata); a sub-pathway's graph comes from the table below instead of the store, and
 * a neuron child's model turn from the mocks (a message containing "bad" fails it, "slow" takes 2 s).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import { permanentOn4xx } from '../../activities/failures.js';
import { evaluateExpression, mapItems, renderTemplate } from '../../src/pathways/runs.js';
import type {
  NeuronRunInput,
  NeuronRunResult,
  PathwayRunInput,
  PathwayRunResult,
  RunGraph,
} from '../../src/temporal/definitions.js';
import { failureOf, recorder, useMockedWorker } from './mocked-worker.js';

type Mocked = Pick<
  Activities,
  | 'startPathwayRun'
  | 'pathwayNodeEvent'
  | 'pathwayStep'
  | 'evaluate'
  | 'renderMessage'
  | 'mapItems'
  | 'prepareSubPathway'
  | 'finishPathwayRun'
  | 'failPathwayRun'
  | 'neuronVersion'
  | 'prepareRun'
  | 'modelTurn'
  | 'finishRun'
  | 'failRun'
  | 'runShort'
  | 'runTool'
>;

const DOUBLE = '00000000-0000-4000-8000-00000000d0b1';
const FAILS = '00000000-0000-4000-8000-00000000fa11';
const SELF = '00000000-0000-4000-8000-0000000005e1';
const line = (...nodes: RunGraph['nodes']): RunGraph => ({
  nodes,
  edges: nodes.map((_, i) => [i, i + 1 < nodes.length ? i + 1 : -1] as [number, number]),
});
/** The graphs prepareSubPathway "compiles" (the store's part is the integration tests'). */
const PATHWAYS: Record<string, RunGraph> = {
  [DOUBLE]: line({ type: 'start', data: {} }, { type: 'transform', data: { expression: 'input.n * 2' } }),
  [FAILS]: line({ type: 'start', data: {} }, { type: 'transform', data: { expression: '$error("child broke")' } }),
  [SELF]: line({ type: 'start', data: {} }, { type: 'pathway', data: { pathway_id: SELF } }),
};

const rec = recorder<keyof Mocked>();
const { calls, callsOf, record } = rec;
const expr = (e: { expression: string; template?: string; context: Record<string, unknown> }) =>
  permanentOn4xx(() =>
    e.template !== undefined ? renderTemplate(e.template, e.context) : evaluateExpression(e.expression, e.context),
  );
/** Neuron children in flight (prepareRun to finishRun/failRun), and the most at once. */
const flight = { now: 0, max: 0 };
/** Each neuron child's message by its job id (a model turn is told only the job). */
const messages = new Map<string, string>();
/** Every message along a failure's cause chain. */
const reasonOf = (f: unknown): string => {
  const out: string[] = [];
  for (let e = f as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e)
    out.push(String(e.message));
  return out.join(' | ');
};

const mocks: Mocked = {
  startPathwayRun: record('startPathwayRun', async () => undefined as never),
  pathwayNodeEvent: record('pathwayNodeEvent', async () => undefined as never),
  pathwayStep: record('pathwayStep', async (a) => (a.evaluate ? expr(a.evaluate) : null)),
  evaluate: record('evaluate', async (a) => expr(a)),
  renderMessage: record('renderMessage', async (a) => renderTemplate(a.template, a.context)),
  mapItems: record('mapItems', async (a) => permanentOn4xx(() => mapItems(a))),
  prepareSubPathway: record('prepareSubPathway', async (c) => {
    const graph = PATHWAYS[c.pathwayId];
    if (!graph) throw ApplicationFailure.nonRetryable('Pathway not found', 'NOT_FOUND');
    const child: PathwayRunInput = {
      jobId: c.jobId,
      scope: c.parent.scope,
      pathwayId: c.pathwayId,
      pathwayVersion: c.version ?? 1,
      traceId: c.parent.traceId,
      input: c.input,
      graph,
      maxSteps: 50,
      depth: (c.parent.depth ?? 0) + 1,
      parentJobId: c.parent.jobId,
      rootJobId: c.parent.rootJobId ?? c.parent.jobId,
    };
    return child;
  }),
  finishPathwayRun: record('finishPathwayRun', async () => undefined as never),
  failPathwayRun: record('failPathwayRun', async () => undefined as never),
  neuronVersion: record('neuronVersion', async () => 7),
  prepareRun: record('prepareRun', async (input) => {
    messages.set(input.jobId, input.message ?? '');
    flight.max = Math.max(flight.max, ++flight.now);
    return {
      model: 'test/model',
      neuronName: 'helper',
      neuronType: null,
      responseFormat: 'text' as const,
      delegates: [],
    };
  }),
  modelTurn: record('modelTurn', async (t) => {
    const message = messages.get(t.jobId) ?? '';
    await sleep(message.includes('slow') ? 2000 : 150);
    if (message.includes('bad')) throw ApplicationFailure.nonRetryable('model refused the request', 'MODEL_4XX');
    return {
      attempt: 1,
      // An item that says "tool" calls one on its first turn, then answers.
      toolCalls: message.includes('tool') && t.turn === 0 ? [{ id: 'call-1', name: 'lookup', arguments: '{}' }] : [],
      usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
      costUsd: 0,
      finishReason: 'stop',
      textChars: 8,
    };
  }),
  finishRun: record('finishRun', async (f) => {
    flight.now--;
    const result: NeuronRunResult = {
      text: `reply to ${f.input.message ?? ''}`,
      engramId: f.engramId,
      traceId: f.input.traceId,
      model: f.model,
      usage: { ...f.usage },
      toolCalls: [],
      turns: f.turns,
    };
    return result;
  }),
  failRun: record('failRun', async () => {
    flight.now--;
    return undefined as never;
  }),
  // A map item's one step, composed of the three mocks above as the run service composes its steps.
  runTool: record('runTool', async () => 'looked up'),
  runShort: record('runShort', async (input, engramId) => {
    const summary = await mocks.prepareRun(input);
    const reply = await mocks.modelTurn({
      jobId: input.jobId,
      workspaceId: input.scope.workspaceId,
      turn: 0,
      accepted: [],
    });
    // "stale": an earlier attempt's stored context rules; the workflow runs the first turn on it.
    if ((input.message ?? '').includes('stale')) return { summary };
    if (reply.toolCalls.length) return { summary, reply };
    const usage = { ...reply.usage, costUsd: reply.costUsd };
    const result = await mocks.finishRun({
      input,
      engramId,
      model: summary.model,
      turns: 1,
      accepted: [reply.attempt],
      usage,
      neuronType: summary.neuronType,
    });
    return { summary, reply, result };
  }),
};

const worker = useMockedWorker('pathway-children', mocks);

function runInput(graph: RunGraph, input: Record<string, unknown> = {}, extra: Partial<PathwayRunInput> = {}) {
  const args: PathwayRunInput = {
    jobId: `pathway-children-${randomUUID()}`,
    scope: { workspaceId: 'ws-test', userId: null, apiKeyId: null, roles: ['admin'], credential: 'test' },
    pathwayId: null,
    pathwayVersion: null,
    traceId: `trace-${randomUUID()}`,
    input,
    graph,
    maxSteps: 50,
    ...extra,
  };
  return args;
}
async function start(graph: RunGraph, input?: Record<string, unknown>, extra?: Partial<PathwayRunInput>) {
  const args = runInput(graph, input, extra);
  return { handle: await worker.start('pathwayRun', args.jobId, args), id: args.jobId, args };
}
const run = async (graph: RunGraph, input?: Record<string, unknown>, extra?: Partial<PathwayRunInput>) => {
  const s = await start(graph, input, extra);
  return { ...s, result: (await s.handle.result()) as PathwayRunResult };
};
/** The neuron children a run started, by message, with their workflow ids. */
const neuronChildren = (parentId: string) =>
  calls
    .filter((c) => c.name === 'prepareRun' && (c.args[0] as NeuronRunInput).parentJobId === parentId)
    .map((c) => ({ id: c.workflowId, message: (c.args[0] as NeuronRunInput).message }));

const mapOver = (data: Record<string, unknown>) =>
  line({ type: 'start', data: {} }, { id: 'm', type: 'map', data }, { type: 'output', data: {} });

describe('pathway node (mocked activities)', () => {
  it("runs the pinned version as a child with its own job; the node's value is the child's output", async () => {
    const graph = line(
      { type: 'start', data: {} },
      { id: 'sub', type: 'pathway', data: { pathway_id: DOUBLE, input: '{ "n": input.a + 1 }' } },
      { type: 'output', data: {} },
    );
    const { id, result } = await run(graph, { a: 20 }, { pathwayVersions: { '1': 3 } });
    expect(result.output).toBe(42);
    const [prep] = callsOf(id, 'prepareSubPathway');
    const call = prep.args[0] as { jobId: string; version: number; input: unknown; parent: { jobId: string } };
    expect(call).toMatchObject({ pathwayId: DOUBLE, version: 3, input: { n: 21 }, parent: { jobId: id } });
    // The child is the workflow whose id is its job id, started with the input the activity prepared.
    const childStart = callsOf(call.jobId, 'startPathwayRun');
    expect(childStart).toHaveLength(1);
    expect(childStart[0].args[0]).toMatchObject({ parentJobId: id, depth: 1, input: { n: 21 } });
    const child = await worker.client().workflow.getHandle(call.jobId).describe();
    expect(child.parentExecution?.workflowId).toBe(id);
  });

  it('without data.input the child gets the current value ({ value } when it is not an object)', async () => {
    const graph = line(
      { type: 'start', data: {} },
      { type: 'transform', data: { expression: 'input.n' } },
      { type: 'pathway', data: { pathway_id: DOUBLE } },
    );
    const { id, result } = await run(graph, { n: 5 });
    expect(callsOf(id, 'prepareSubPathway')[0].args[0]).toMatchObject({ input: { value: 5 } });
    // { value: 5 } has no n: the child's transform yields nothing.
    expect(result.output).toBeUndefined();
  });

  it('a child that fails fails the node with its reason', async () => {
    const { handle } = await start(line({ type: 'start', data: {} }, { type: 'pathway', data: { pathway_id: FAILS } }));
    const failure = await failureOf(handle);
    expect(reasonOf(failure)).toContain('child broke');
  });

  it('a pathway that runs itself stops at 5 levels of nesting with a clear failure', async () => {
    const { handle, id } = await start(PATHWAYS[SELF]);
    await failureOf(handle);
    const failed = calls.filter((c) => c.name === 'failPathwayRun');
    const reasons = failed.map((c) => String(c.args[1]));
    expect(reasons.some((r) => r.includes('sub-pathways nest more than 5 levels deep'))).toBe(true);
    // Five nested children were prepared under this run (depth 1..5), no sixth.
    const depths = calls
      .filter((c) => c.name === 'startPathwayRun')
      .map((c) => c.args[0] as PathwayRunInput)
      .filter((i) => i.rootJobId === id)
      .map((i) => i.depth);
    expect(depths.sort()).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('map node (mocked activities)', () => {
  it('runs a neuron per item at most `concurrency` at a time; the results are in item order', async () => {
    flight.max = 0;
    const list = ['slow one', 'two', 'three', 'four', 'five', 'six'];
    const { id, result } = await run(
      mapOver({ items: 'input.list', neuron_id: 'neuron-1', message: '#{{ index }} {{ item }}', concurrency: 2 }),
      { list },
    );
    expect(result.output).toEqual(list.map((item, i) => `reply to #${i} ${item}`));
    expect(flight.max).toBe(2);
    // The messages were rendered in one activity; each item ran as a child with its own job under this run's.
    expect(callsOf(id, 'mapItems')).toHaveLength(1);
    expect(callsOf(id, 'renderMessage')).toHaveLength(0);
    expect(neuronChildren(id)).toHaveLength(6);
    expect(callsOf(id, 'neuronVersion')).toHaveLength(1);
    const status = await worker.client().workflow.getHandle(id).describe();
    expect(status.status.name).toBe('COMPLETED');
  });

  it('an item whose first turn calls a tool goes on in its workflow from that turn: the tool, a second turn, the save', async () => {
    const { id, result } = await run(mapOver({ items: 'input.list', neuron_id: 'neuron-1', concurrency: 2 }), {
      list: ['plain', 'with tool'],
    });
    expect(result.output).toEqual(['reply to plain', 'reply to with tool']);
    const children = neuronChildren(id);
    const plain = children.find((c) => c.message === 'plain')!.id;
    const tooled = children.find((c) => c.message === 'with tool')!.id;
    // The plain item: one step. The other: its step stopped at the tool call; the run went on.
    expect(callsOf(plain, 'runShort')).toHaveLength(1);
    expect(callsOf(plain, 'finishRun')).toHaveLength(1);
    expect(callsOf(tooled, 'runShort')).toHaveLength(1);
    expect(callsOf(tooled, 'runTool')).toHaveLength(1);
    expect(callsOf(tooled, 'modelTurn').map((c) => (c.args[0] as { turn: number }).turn)).toEqual([0, 1]);
    const finish = callsOf(tooled, 'finishRun');
    expect(finish).toHaveLength(1);
    expect(finish[0].args[0]).toMatchObject({ turns: 2, accepted: [1, 1] });
  });

  it('an item whose one step gives back no reply runs its first turn in its workflow, then saves', async () => {
    const { id, result } = await run(mapOver({ items: 'input.list', neuron_id: 'neuron-1' }), { list: ['stale one'] });
    expect(result.output).toEqual(['reply to stale one']);
    const [child] = neuronChildren(id);
    expect(callsOf(child.id, 'runShort')).toHaveLength(1);
    expect(callsOf(child.id, 'modelTurn').map((c) => (c.args[0] as { turn: number }).turn)).toEqual([0, 0]);
    expect(callsOf(child.id, 'finishRun')[0].args[0]).toMatchObject({ turns: 1, accepted: [1] });
  });

  it('on_item_error continue: a failed item is { error } and the others complete', async () => {
    const { result } = await run(
      mapOver({ items: 'input.list', neuron_id: 'neuron-1', on_item_error: 'continue', concurrency: 3 }),
      { list: ['a', 'bad b', 'c'] },
    );
    expect(result.output).toEqual(['reply to a', { error: expect.stringContaining('model refused') }, 'reply to c']);
  });

  it('on_item_error fail (default): the items still running are cancelled and the node fails naming the item', async () => {
    const { handle, id } = await start(mapOver({ items: 'input.list', neuron_id: 'neuron-1', concurrency: 2 }), {
      list: ['slow a', 'bad b', 'c', 'd'],
    });
    const failure = await failureOf(handle);
    expect(reasonOf(failure)).toContain('node m (map): item 1 failed: model refused the request');
    const children = neuronChildren(id);
    // c and d never started; the slow item was cancelled rather than awaited.
    expect(children.map((c) => c.message).sort()).toEqual(['bad b', 'slow a']);
    const slowId = children.find((c) => c.message === 'slow a')!.id;
    const slow = await worker.client().workflow.getHandle(slowId).describe();
    expect(slow.status.name).toBe('CANCELLED');
  });

  it('maps over a pathway: each item is a child run (item as input, or data.input over item and index)', async () => {
    const byInput = await run(
      mapOver({ items: 'input.list', pathway_id: DOUBLE, input: '{ "n": item + index }', concurrency: 2 }),
      { list: [1, 2, 3] },
    );
    expect(byInput.result.output).toEqual([2, 6, 10]);
    const byItem = await run(mapOver({ items: 'input.list', pathway_id: DOUBLE }), { list: [{ n: 4 }, { n: 5 }] });
    expect(byItem.result.output).toEqual([8, 10]);
    expect(callsOf(byItem.id, 'prepareSubPathway').map((c) => (c.args[0] as { input: unknown }).input)).toEqual([
      { n: 4 },
      { n: 5 },
    ]);
  });

  it('items that are not an array fail the node clearly; an empty list is an empty result', async () => {
    const { handle } = await start(mapOver({ items: 'input.n', neuron_id: 'neuron-1' }), { n: 3 });
    const failure = await failureOf(handle);
    expect(reasonOf(failure)).toContain('must yield an array; it yielded a number');
    const { result } = await run(mapOver({ items: 'input.list', neuron_id: 'neuron-1' }), { list: [] });
    expect(result.output).toEqual([]);
  });
});
