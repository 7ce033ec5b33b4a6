import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../scripts/embedded.js';
import { buildWorkspace, useTestApp } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { spawnWorkerProcess } from '../support/worker.js';

/*
 * The worker process as `npm run up` runs it, with both of its Prometheus endpoints: its own
 * series (WORKER_METRICS_PORT: runs it finishes) and the Temporal SDK's (TEMPORAL_METRICS_ADDRESS).
 */
const app = useTestApp();
let worker: ChildProcess | undefined;
let ports: number[] = [];
beforeAll(async () => {
  ports = await freePorts(2);
  worker = await spawnWorkerProcess(app, {
    WORKER_METRICS_PORT: String(ports[0]),
    TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${ports[1]}`,
  });
});
afterAll(() => {
  if (worker?.exitCode === null) worker.kill('SIGKILL');
});

describe('worker metrics', () => {
  it('serve the runs the worker finished and the Temporal SDK series of its task queue', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'worker-measured',
      brain_id: ws.brainId,
      neuron_config: { model: 'local/echo' },
    });
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'count me' });
    expect((await settleJob(app, ws.key, String(inv.body.job_id))).status).toBe('completed');

    const own = await (await fetch(`http://127.0.0.1:${ports[0]}/`)).text();
    expect(own).toMatch(/^cortex_runs_finished_total\{kind="neuron",outcome="completed"\} [1-9]/m);
    // The SDK reports completions when the workflow task completes: poll (bounded) for the series.
    const queue = `task_queue="${app.config.TEMPORAL_TASK_QUEUE}"`;
    let sdk = '';
    for (let i = 0; i < 50 && !/^temporal_workflow_completed\{/m.test(sdk); i++) {
      sdk = await (await fetch(`http://127.0.0.1:${ports[1]}/metrics`)).text();
      if (!/^temporal_workflow_completed\{/m.test(sdk)) await new Promise((r) => setTimeout(r, 100));
    }
    const completed = sdk
      .split('\n')
      .find(
        (l) =>
          l.startsWith('temporal_workflow_completed{') && l.includes(queue) && l.includes('workflow_type="neuronRun"'),
      );
    expect(
      completed,
      sdk
        .split('\n')
        .filter((l) => l.startsWith('temporal_'))
        .slice(0, 20)
        .join('\n'),
    ).toBeDefined();
    expect(Number(completed!.split(' ').at(-1))).toBeGreaterThanOrEqual(1);
    // A short run adopts its first turn in a local activity (src/runs/first-turns.ts): either kind of activity series counts.
    expect(sdk).toMatch(/^temporal_(local_)?activity_execution_latency(_seconds)?_bucket\{/m);
  });

  it('a worker serving metrics still exits on SIGTERM', async () => {
    const exited = new Promise<number | null>((r) => worker!.once('exit', (code) => r(code)));
    worker!.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000))]);
    expect(code).toBe(0);
  });
});
