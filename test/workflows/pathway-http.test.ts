/**
 * The pathway `http` node in the interpreter (workflows/pathways/nodes/http.ts), with mocked
 * activities (the frame is test/workflows/mocked-worker.ts): the node calls the `pathwayHttp`
 * activity with its data as written (templates, never rendered values), the run's context, its id
 * and its visit number; the answer is the node's value; a non-retryable failure (a status outside
 * `expect`) fails the run at once; the node's `retry` policy decides how many attempts a retryable
 * failure gets.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import type { HttpNodeCall, HttpNodeResult } from '../../src/pathways/http.js';
import type { PathwayRunInput, PathwayRunResult, RunGraph } from '../../src/temporal/definitions.js';
import { failureOf, recorder, useMockedWorker } from './mocked-worker.js';

type Mocked = Pick<
  Activities,
  | 'startPathwayRun'
  | 'pathwayNodeEvent'
  | 'pathwayStep'
  | 'evaluate'
  | 'finishPathwayRun'
  | 'failPathwayRun'
  | 'pathwayHttp'
>;
const { callsOf, record } = recorder<keyof Mocked>();

/**
 * The receiver the mock stands for, by URL: `ok` answers 200 with JSON; `missing` is a 404 outside
 * `expect` (non-retryable, as the real activity reports it); `flaky` fails retryably until the
 * attempt named by its `?ok=` parameter; `down` always fails retryably.
 */
async function answer(a: HttpNodeCall, attempt: number): Promise<HttpNodeResult> {
  const url = new URL(String(a.data.url));
  switch (url.hostname) {
    case 'ok.test':
      return { status: 200, headers: { 'content-type': 'application/json' }, body: { url: a.data.url } };
    case 'missing.test':
      throw ApplicationFailure.nonRetryable(
        'GET https://missing.test/x answered 404, expected 2xx: no such item',
        'HTTP_STATUS',
      );
    case 'flaky.test':
      if (attempt < Number(url.searchParams.get('ok')))
        throw ApplicationFailure.retryable(`GET https://flaky.test/ answered 503, expected 2xx: busy`, 'HTTP_STATUS');
      return { status: 200, headers: {}, body: `ok on attempt ${attempt}` };
    default:
      throw ApplicationFailure.retryable('request failed: connect ECONNREFUSED', 'HTTP_NETWORK');
  }
}

const mocks: Mocked = {
  startPathwayRun: record('startPathwayRun', async () => undefined as never),
  pathwayNodeEvent: record('pathwayNodeEvent', async () => undefined as never),
  pathwayStep: record('pathwayStep', async () => null),
  evaluate: record('evaluate', async () => null),
  finishPathwayRun: record('finishPathwayRun', async () => undefined as never),
  failPathwayRun: record('failPathwayRun', async () => undefined as never),
  pathwayHttp: record('pathwayHttp', async (a) => answer(a, Context.current().info.attempt)),
};

const worker = useMockedWorker('pathway-http', mocks);

function runInput(graph: RunGraph, input: Record<string, unknown> = {}): PathwayRunInput {
  return {
    jobId: `pathway-http-${randomUUID()}`,
    scope: { workspaceId: 'ws-test', userId: null, apiKeyId: null, roles: ['admin'], credential: 'test' },
    pathwayId: null,
    pathwayVersion: null,
    traceId: `trace-${randomUUID()}`,
    input,
    graph,
    maxSteps: 50,
  };
}
async function start(http: Record<string, unknown>, input: Record<string, unknown> = {}) {
  const graph: RunGraph = {
    nodes: [
      { id: 'begin', type: 'start', data: {} },
      { id: 'call', type: 'http', data: http },
      { id: 'done', type: 'output', data: {} },
    ],
    edges: [
      [0, 1],
      [1, 2],
    ],
  };
  const args = runInput(graph, input);
  const handle = await worker.start('pathwayRun', args.jobId, args);
  return { handle, id: args.jobId, args };
}
const httpCalls = (id: string) => callsOf(id, 'pathwayHttp');

describe('pathway http node (mocked activities)', () => {
  it("calls pathwayHttp with the node's templates, the run's context, its id and visit; the answer is the value", async () => {
    const data = { url: 'https://ok.test/items/{{ input.id }}', headers: { Authorization: 'Bearer {{ secrets.T }}' } };
    const { handle, id, args } = await start(data, { id: 7 });
    const result = (await handle.result()) as PathwayRunResult;
    const value = { status: 200, headers: { 'content-type': 'application/json' }, body: { url: data.url } };
    expect(result.output).toEqual(value);
    expect(result.nodes.call).toEqual(value);
    const calls = httpCalls(id);
    expect(calls.map((c) => c.attempt)).toEqual([1]);
    expect(calls[0].args[0]).toEqual({
      scope: args.scope,
      jobId: args.jobId,
      nodeId: 'call',
      visit: 1,
      data,
      context: { input: { id: 7 }, last: { id: 7 }, nodes: { '0': { id: 7 }, begin: { id: 7 } }, loops: {} },
    });
  });

  it('a status outside expect fails the node and the run at once, with the activity’s message', async () => {
    const { handle, id, args } = await start({ url: 'https://missing.test/x', retry: { max_attempts: 5 } });
    const cause = await failureOf(handle);
    expect(cause).toBeInstanceOf(ActivityFailure);
    const root = (cause as ActivityFailure).cause as ApplicationFailure;
    expect(root.type).toBe('HTTP_STATUS');
    expect(root.nonRetryable).toBe(true);
    expect(httpCalls(id).map((c) => c.attempt)).toEqual([1]);
    expect(callsOf(id, 'failPathwayRun').map((c) => c.args.slice(0, 2))).toEqual([
      [args, 'GET https://missing.test/x answered 404, expected 2xx: no such item'],
    ]);
    expect(callsOf(id, 'finishPathwayRun')).toEqual([]);
  });

  it('retry.max_attempts 3 makes three attempts of a retryable failure, then the run fails', async () => {
    const { handle, id } = await start({
      url: 'https://down.test/',
      retry: { max_attempts: 3, initial_interval_ms: 50, backoff: 1 },
    });
    const cause = await failureOf(handle);
    expect(((cause as ActivityFailure).cause as ApplicationFailure).message).toContain('ECONNREFUSED');
    expect(httpCalls(id).map((c) => c.attempt)).toEqual([1, 2, 3]);
  });

  it('retry.max_attempts 2: a call that fails once succeeds on its second attempt with the same arguments', async () => {
    const { handle, id } = await start({
      url: 'https://flaky.test/?ok=2',
      retry: { max_attempts: 2, initial_interval_ms: 50 },
    });
    const result = (await handle.result()) as PathwayRunResult;
    expect(result.output).toEqual({ status: 200, headers: {}, body: 'ok on attempt 2' });
    const calls = httpCalls(id);
    expect(calls.map((c) => c.attempt)).toEqual([1, 2]);
    // The same visit both times: the activity derives the same Idempotency-Key from it.
    expect(calls[1].args).toEqual(calls[0].args);
  });

  it('max_attempts 1 means no retry', async () => {
    const { handle, id } = await start({ url: 'https://flaky.test/?ok=2', retry: { max_attempts: 1 } });
    await failureOf(handle);
    expect(httpCalls(id).map((c) => c.attempt)).toEqual([1]);
  });
});
