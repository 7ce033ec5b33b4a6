/**
 * Shared frame of the workflow tests with mocked activities (pathway-pauses, neuron-run): a
 * Temporal Worker on its own task queue runs the prebuilt workflow bundle
 * (test/support/global-setup.ts) over a plain object of mocks that record every call, so a
 * test asserts both a run's result and what the workflow asked for.
 *
 * Temporal: the real dev server the integration setup starts (inject('temporalAddress')). The
 * time-skipping test server is not available here (@temporalio/testing is not installed and its
 * server is a binary downloaded from outside the reachable registries), so timers really elapse.
 *
 * SAVE_HISTORIES=<dir> writes the history of every run a file started to <dir> (the JSON the
 * SDK's replayer reads), to replay them against another version of the workflow code.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import type { Activities } from '../../activities/index.js';

/** One recorded activity call: which run (workflow id) asked, which activity, its arguments and attempt. */
export interface Call<N extends string = string> {
  workflowId: string;
  name: N;
  args: unknown[];
  attempt: number;
}

/** Records the calls of the mocks built with `record`. */
export function recorder<N extends string>() {
  const calls: Call<N>[] = [];
  return {
    calls,
    callsOf: (workflowId: string, name?: N) =>
      calls.filter((c) => c.workflowId === workflowId && (name === undefined || c.name === name)),
    /** Wraps an activity implementation so that each call is recorded before it runs. */
    record<F>(name: N, impl: F): F {
      const wrapped = (...args: unknown[]) => {
        const info = Context.current().info;
        calls.push({ name, args, workflowId: info.workflowExecution?.workflowId ?? '', attempt: info.attempt });
        return (impl as (...a: unknown[]) => unknown)(...args);
      };
      return wrapped as F;
    },
  };
}

/**
 * Runs a worker over `activities` for the test file (beforeAll/afterAll). `start` starts a
 * workflow by type on its task queue with the job id as the workflow id, as the API does.
 */
export function useMockedWorker(name: string, activities: object) {
  const taskQueue = `${name}-${randomUUID()}`;
  const started: string[] = [];
  let client: Client;
  let connection: Connection;
  let nativeConnection: NativeConnection;
  let stopWorker: () => void;
  let workerDone: Promise<void>;

  beforeAll(async () => {
    const address = inject('temporalAddress');
    nativeConnection = await NativeConnection.connect({ address });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: 'default', // the dev server's namespace (config TEMPORAL_NAMESPACE defaults to it)
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities,
      // The bundle's workflow interceptors export spans through this sink (only for traced starts; none here).
      sinks: { exporter: { export: { fn: () => undefined } } },
      shutdownGraceTime: '1s',
    });
    const stopped = new Promise<void>((resolve) => (stopWorker = resolve));
    workerDone = worker.runUntil(stopped);
    connection = await Connection.connect({ address });
    client = new Client({ connection, namespace: 'default' });
  });

  afterAll(async () => {
    const dir = process.env.SAVE_HISTORIES;
    if (dir && client) {
      mkdirSync(dir, { recursive: true });
      for (const id of started) {
        const history = await client.workflow.getHandle(id).fetchHistory();
        writeFileSync(`${dir}/${name}-${id}.json`, historyToJSON(history));
      }
    }
    stopWorker?.();
    await workerDone;
    await connection?.close();
    await nativeConnection?.close();
  });

  return {
    taskQueue,
    client: () => client,
    async start<A>(workflowType: string, workflowId: string, args: A) {
      const handle = await client.workflow.start(workflowType, {
        taskQueue,
        workflowId,
        args: [args],
        // A broken run fails the test in seconds rather than at the test timeout.
        workflowExecutionTimeout: '30s',
      });
      started.push(workflowId);
      return handle;
    },
  };
}

export async function waitFor<T>(what: string, probe: () => T | undefined, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The failure a run ended with: WorkflowFailedError → (Activity|ChildWorkflow)Failure → root ApplicationFailure. */
export async function failureOf(handle: { result(): Promise<unknown> }) {
  const err = await handle.result().then(
    () => {
      throw new Error('the run completed; it was expected to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return (err as WorkflowFailedError).cause;
}

/** Polls a query until `done` holds of its answer (or the time is up: the last answer is returned). */
export async function until<T>(ask: () => Promise<T>, done: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await ask();
  while (!done(v) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    v = await ask();
  }
  return v;
}

/** The activities the pathway interpreter calls for its own steps (entries, expressions, interventions, start and end). */
export type PathwayStepActivities = Pick<
  Activities,
  | 'startPathwayRun'
  | 'pathwayNodeEvent'
  | 'pathwayStep'
  | 'evaluate'
  | 'renderMessage'
  | 'openIntervention'
  | 'expireIntervention'
  | 'recordAnswer'
  | 'finishPathwayRun'
  | 'failPathwayRun'
>;

/** A node expression as the evaluate activities receive it. */
type Expr = { expression: string; template?: string; context: Record<string, unknown> };

/**
 * Evaluates the expressions a test's graphs use, written as JavaScript over the run context (the
 * real activity evaluates JSONata; here the interpreter's wiring is under test). An expression not
 * listed fails the node as a bad one does: a non-retryable failure.
 */
export const expressionsOf =
  <C>(table: Record<string, (c: C) => unknown>, failure: (message: string) => Error) =>
  (e: Expr): unknown => {
    const f = table[e.expression];
    if (!f) throw failure(`expression "${e.expression}" failed: unknown`);
    return f(e.context as C);
  };

/** Recorded mocks of PathwayStepActivities over `evaluate`; interventions are recorded as asked, answers as given. */
export function pathwayStepMocks(
  record: <F>(name: keyof PathwayStepActivities, impl: F) => F,
  evaluate: (e: Expr) => unknown,
): PathwayStepActivities {
  return {
    startPathwayRun: record('startPathwayRun', async () => undefined as never),
    pathwayNodeEvent: record('pathwayNodeEvent', async () => undefined as never),
    pathwayStep: record('pathwayStep', async (a: { evaluate?: Expr }) => (a.evaluate ? evaluate(a.evaluate) : null)),
    evaluate: record('evaluate', async (a: Expr) => evaluate(a)),
    renderMessage: record(
      'renderMessage',
      async (a: { template?: string; context: Record<string, unknown> }) =>
        a.template ?? (typeof a.context.last === 'string' ? a.context.last : JSON.stringify(a.context.last)),
    ),
    openIntervention: record(
      'openIntervention',
      async (
        _input: unknown,
        spec: { id: string; kind: string; nodeIndex: number; title: string; prompt: string; options: string[] },
      ) => ({
        type: 'intervention',
        interventionId: spec.id,
        kind: spec.kind,
        node: spec.nodeIndex,
        title: spec.title,
        prompt: spec.prompt,
        options: spec.options,
        expires_at: null,
      }),
    ),
    expireIntervention: record('expireIntervention', async () => undefined as never),
    recordAnswer: record('recordAnswer', async (_input: unknown, answer: { action: string }, kind: string) =>
      kind === 'pause'
        ? 'answered'
        : answer.action === 'approve'
          ? 'approved'
          : answer.action === 'reject'
            ? 'rejected'
            : 'answered',
    ),
    finishPathwayRun: record('finishPathwayRun', async () => undefined as never),
    failPathwayRun: record('failPathwayRun', async () => undefined as never),
  } as PathwayStepActivities;
}
