/**
 * The bare one-activity workflow of (b) and (c) (scripts/bench/bare-workflows.ts): its own bundle,
 * worker and task queue on the app's Temporal server, the yardstick the platform is compared with.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import type { TestApp } from '../../test/support/app.js';
import { createBenchActivities } from './bare-activities.js';
import type { bareOneActivity } from './bare-workflows.js';

/** The bare one-activity workflow: its own bundle, worker and task queue on the app's Temporal server. */
export interface Bare {
  /** Starts one bareOneActivity run and waits for its result; returns its workflow id. */
  runOnce(): Promise<string>;
  stop(): Promise<void>;
}

/** Bundles scripts/bench/bare-workflows.ts and starts the bare worker on it. */
export async function bundleAndStartBare(app: TestApp): Promise<Bare> {
  const bundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./bare-workflows.ts', import.meta.url)),
    logger: new DefaultLogger('WARN'),
  });
  return startBare(app, bundle);
}

async function startBare(app: TestApp, bundle: Awaited<ReturnType<typeof bundleWorkflowCode>>): Promise<Bare> {
  const taskQueue = `bench-bare-${randomUUID().slice(0, 8)}`;
  const connection = await NativeConnection.connect({ address: app.config.TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    namespace: app.config.TEMPORAL_NAMESPACE,
    taskQueue,
    workflowBundle: bundle,
    activities: createBenchActivities(),
  });
  const running = worker.run();
  const client = app.deps.temporal.client;
  return {
    async runOnce() {
      // Started by name with the function's type: this module never loads workflow code.
      const workflowId = `bench-bare-${randomUUID()}`;
      const out = await client.workflow.execute<typeof bareOneActivity>('bareOneActivity', { taskQueue, workflowId });
      if (out !== 'ok') throw new Error(`bareOneActivity returned ${JSON.stringify(out)}`);
      return workflowId;
    },
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
