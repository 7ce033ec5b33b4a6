import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
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

/** The app's stores, Redis prefix and task queue, for a child process that must share them. */
function sharedEnv(app: TestApp): Record<string, string | undefined> {
  return {
    ...process.env,
    MONGODB_URI: app.config.MONGODB_URI,
    MONGODB_DB: app.config.MONGODB_DB,
    REDIS_URL: app.config.REDIS_URL,
    REDIS_CLUSTER_NODES: app.config.REDIS_CLUSTER_NODES,
    REDIS_PREFIX: app.config.REDIS_PREFIX,
    // The feed's partition count is recorded in Redis: a worker with another count would refuse to start.
    RESOURCE_FEED_PARTITIONS: String(app.config.RESOURCE_FEED_PARTITIONS),
    TEMPORAL_ADDRESS: app.config.TEMPORAL_ADDRESS,
    TEMPORAL_TASK_QUEUE: app.config.TEMPORAL_TASK_QUEUE,
  };
}

/**
 * How a service process runs: `tsx` runs the TypeScript as `npm run up` does; `compiled` runs
 * the output of `npm run build` (dist/, no loader), as the production image does.
 */
export type ServiceForm = 'tsx' | 'compiled';

function serviceArgs(entry: 'api/server' | 'worker/index', form: ServiceForm): string[] {
  // CORTEX_CPU_PROF_DIR: the process writes a V8 CPU profile there when it exits (profiling a bench).
  const prof = process.env.CORTEX_CPU_PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', process.env.CORTEX_CPU_PROF_DIR] : [];
  return [...prof, ...(form === 'compiled' ? [`dist/${entry}.js`] : ['--import', 'tsx', `${entry}.ts`])];
}

/**
 * A real worker process (`node --import tsx worker/index.ts`, as `npm run up` runs it, or the
 * compiled one) on the app's database, Redis prefix and task queue. Resolves once the worker
 * polls; `extraEnv` adds provider settings. Used where a worker must die for real, or run beside
 * the API as in production. A compiled worker needs CORTEX_WORKFLOW_BUNDLE (dist/ has no sources
 * to bundle).
 */
export function spawnWorkerProcess(
  app: TestApp,
  extraEnv: Record<string, string> = {},
  form: ServiceForm = 'tsx',
): Promise<ChildProcess> {
  const env = { ...sharedEnv(app), LOG_LEVEL: 'info', ...extraEnv };
  const child = spawn(process.execPath, serviceArgs('worker/index', form), {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('worker did not start')), 90_000);
    child.stdout!.on('data', (b: Buffer) => {
      if (b.toString().includes('worker running')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.stderr!.resume();
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited ${code}`));
    });
  });
}

/**
 * A real API process (`api/server`) on the app's stores, listening on 127.0.0.1:`port`, with the
 * app's JWT secret and data folder, so keys and tokens made through `app` work against it.
 * Resolves with the child once `GET /v1/health` answers. Logs at `warn` (a request log per call
 * would be the bench's own load on the process).
 */
export async function spawnApiProcess(
  app: TestApp,
  port: number,
  extraEnv: Record<string, string> = {},
  form: ServiceForm = 'tsx',
): Promise<ChildProcess> {
  const env = {
    ...sharedEnv(app),
    HOST: '127.0.0.1',
    PORT: String(port),
    JWT_SECRET: app.config.JWT_SECRET,
    DATA_DIR: app.config.DATA_DIR,
    NODE_ENV: app.config.NODE_ENV,
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  const child = spawn(process.execPath, serviceArgs('api/server', form), {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  // BENCH_API_LOG: the API process's log lines (at warn) are appended to that file too, to read afterwards.
  const logFile = process.env.BENCH_API_LOG;
  const keep = (b: Buffer): void => {
    output = (output + b.toString()).slice(-4000);
    if (logFile) appendFileSync(logFile, b);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited: number | null | undefined;
  child.once('exit', (code) => {
    exited = code;
  });
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`api exited ${exited}: ${output}`);
    const up = await fetch(`http://127.0.0.1:${port}/v1/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`api did not answer /v1/health within 90 s: ${output}`);
}
