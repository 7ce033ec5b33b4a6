/**
 * Parallel branches, joins and per-node error policies of the pathway interpreter, with mocked
 * activities on the real Temporal dev server (frame: test/workflows/mocked-worker.ts). Delays are
 * real durable timers, so the timings below are what Temporal does, not a simulation.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { PathwayRunInput, PathwayRunResult, RunGraph } from '../../src/temporal/definitions.js';
import {
  expressionsOf,
  failureOf,
  pathwayStepMocks,
  recorder,
  useMockedWorker,
  type PathwayStepActivities,
} from './mocked-worker.js';

const { callsOf, record } = recorder<keyof PathwayStepActivities>();

/** Expressions as JavaScript over the context; any other (`boom`) fails as a bad expression does. */
const evaluate = expressionsOf<{ last: unknown }>(
  {
    '"a"': () => 'a',
    '"b"': () => 'b',
    'last + 1': (c) => Number(c.last) + 1,
  },
  (m) => ApplicationFailure.nonRetryable(m, 'VALIDATION'),
);

const mocks = pathwayStepMocks(record, evaluate);

const worker = useMockedWorker('pathway-parallel', mocks);

async function run(graph: RunGraph, input: Record<string, unknown> = {}) {
  const args: PathwayRunInput = {
    jobId: `pathway-parallel-${randomUUID()}`,
    scope: { workspaceId: 'ws-test', userId: null, apiKeyId: null, roles: ['admin'], credential: 'test' },
    pathwayId: null,
    pathwayVersion: null,
    traceId: `trace-${randomUUID()}`,
    input,
    graph,
    maxSteps: 100,
  };
  const t0 = Date.now();
  const handle = await worker.start('pathwayRun', args.jobId, args);
  return {
    id: args.jobId,
    handle,
    done: async () => ({ result: (await handle.result()) as PathwayRunResult, ms: Date.now() - t0 }),
  };
}

const node = (id: string, type: string, data: Record<string, unknown> = {}) => ({ id, type, data });

/** start → two delays side by side → join (mode) → output. */
const twoDelays = (msA: number, msB: number, mode: 'all' | 'any'): RunGraph => ({
  nodes: [
    node('start', 'start'),
    node('slow', 'delay', { ms: msA }),
    node('fast', 'delay', { ms: msB }),
    node('join', 'join', { mode }),
    node('out', 'output'),
  ],
  edges: [
    [0, 1],
    [0, 2],
    [1, 3],
    [2, 3],
    [3, 4],
  ],
});

describe('parallel branches and joins (mocked activities)', () => {
  it('two 2-second delays into a join (all) finish in about 2 s, not 4; the join holds both, keyed by node id', async () => {
    const r = await run(twoDelays(2000, 2000, 'all'), { n: 1 });
    const { result, ms } = await r.done();
    expect(ms).toBeLessThan(3500);
    expect(result.output).toEqual({ slow: { n: 1 }, fast: { n: 1 } });
    expect(result.visited.slice(0, 1)).toEqual(['start']);
    expect([...result.visited.slice(1, 3)].sort()).toEqual(['fast', 'slow']);
    expect(result.visited.slice(3)).toEqual(['join', 'out']);
  });

  it('a join (any) takes the first branch and cancels the other (its timer is cancelled in Temporal)', async () => {
    const r = await run(twoDelays(20_000, 300, 'any'), { n: 2 });
    const { result, ms } = await r.done();
    expect(ms).toBeLessThan(5000);
    expect(result.output).toEqual({ fast: { n: 2 } });
    expect(result.visited).not.toContain(undefined);
    const history = await r.handle.fetchHistory();
    const cancelled = (history.events ?? []).filter((e) => e.timerCanceledEventAttributes);
    expect(cancelled).toHaveLength(1);
  });

  it('branches without a join: the run ends when every branch has ended, each branch carrying its own value', async () => {
    const graph: RunGraph = {
      nodes: [
        node('start', 'start'),
        node('a', 'transform', { expression: '"a"' }),
        node('b', 'transform', { expression: '"b"' }),
        node('wait', 'delay', { ms: 500 }),
        node('after-b', 'output'),
      ],
      edges: [
        [0, 1],
        [0, 2],
        [2, 3],
        [3, 4],
      ],
    };
    const { result } = await (await run(graph)).done();
    expect(result.nodes).toMatchObject({ a: 'a', b: 'b', wait: 'b', 'after-b': 'b' });
    expect(result.output).toBe('b');
  });

  it('on_error continue: the failed node is { error } and the run goes on; branch: the error edge is taken', async () => {
    const graph = (policy: 'continue' | 'branch'): RunGraph => ({
      nodes: [
        node('start', 'start'),
        node('risky', 'transform', { expression: 'boom', on_error: policy }),
        node('next', 'output'),
        node('recover', 'output', { value: '"b"' }),
      ],
      edges: [
        [0, 1],
        [1, 2],
        [1, 3, 'error'],
      ],
    });
    const cont = await (await run(graph('continue'))).done();
    expect(cont.result.nodes.risky).toEqual({ error: 'expression "boom" failed: unknown' });
    expect(cont.result.visited).toEqual(['start', 'risky', 'next']);
    expect(cont.result.errors).toEqual({ risky: { error: 'expression "boom" failed: unknown', policy: 'continue' } });
    const br = await (await run(graph('branch'))).done();
    expect(br.result.visited).toEqual(['start', 'risky', 'recover']);
    expect(br.result.output).toBe('b');
  });

  it('a failing branch fails the run and stops the others', async () => {
    const graph: RunGraph = {
      nodes: [
        node('start', 'start'),
        node('bad', 'transform', { expression: 'boom' }),
        node('long', 'delay', { ms: 30_000 }),
      ],
      edges: [
        [0, 1],
        [0, 2],
      ],
    };
    const r = await run(graph);
    const cause = await failureOf(r.handle);
    expect(String(cause?.message)).toMatch(/boom/);
    expect(callsOf(r.id, 'failPathwayRun')).toHaveLength(1);
  });
});
