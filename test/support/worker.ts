import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestApp } from './app.js';
import { createWorker } from '../../worker/index.js';

/**
 * Runs a real Temporal worker in the test process on the app's own task queue (each test app
 * has a fresh one), using the bundle built once by global-setup when present.
 */
export async function startTestWorker(app: TestApp) {
  const { worker, connection } = await createWorker(app.deps);
  const running = worker.run();
  return {
    worker,
    /** Stops polling; in-flight activities are cancelled after the grace time (a worker going away). */
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
  };
}

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A real worker process (`node --import tsx worker/index.ts`, as `npm run up` runs it) on the
 * app's database, Redis prefix and task queue. Resolves once the worker polls; `extraEnv`
 * adds provider settings. Used where a worker must die for real, or run beside the API as in
 * production.
 */
export function spawnWorkerProcess(app: TestApp, extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
  const env = {
    ...process.env, MONGODB_URI: app.config.MONGODB_URI, MONGODB_DB: app.config.MONGODB_DB, REDIS_URL: app.config.REDIS_URL,
    REDIS_PREFIX: app.config.REDIS_PREFIX, TEMPORAL_ADDRESS: app.config.TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE: app.config.TEMPORAL_TASK_QUEUE,
    LOG_LEVEL: 'info', ...extraEnv,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/index.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('worker did not start')), 90_000);
    child.stdout!.on('data', (b: Buffer) => { if (b.toString().includes('worker running')) { clearTimeout(timer); resolve(child); } });
    child.stderr!.resume();
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`worker exited ${code}`)); });
  });
}
