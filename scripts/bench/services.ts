/**
 * What the bench stands on: the services (those whose URL variable is set are used as they are, the
 * others started by scripts/embedded.ts in a temp folder), the in-process API on its own database
 * and Redis prefix, and the compiled platform worker and API processes the sections start.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { makeClient, startTestApp, type TestApp } from '../../test/support/app.js';
import type { ScriptedOpenAI } from '../../test/support/scripted-openai.js';
import { spawnApiProcess, spawnWorkerProcess } from '../../test/support/worker.js';
import { startEmbedded, freePorts, type EmbeddedServices } from '../embedded.js';
import { MB, pidRss } from './probes.js';
import type { Child, ServedApi } from './section.js';
import { dropRedisKeys, say } from './support.js';

type OnCleanup = (fn: () => Promise<unknown>) => void;

/** MONGODB_URI, REDIS_URL and TEMPORAL_ADDRESS: each one set is used as is, the missing ones are started. */
export async function useOrStartServices(onCleanup: OnCleanup): Promise<void> {
  const need = {
    mongo: !process.env.MONGODB_URI,
    redis: !process.env.REDIS_URL,
    temporal: !process.env.TEMPORAL_ADDRESS,
  };
  for (const [name, value] of [
    ['MONGODB_URI', process.env.MONGODB_URI],
    ['REDIS_URL', process.env.REDIS_URL],
    ['TEMPORAL_ADDRESS', process.env.TEMPORAL_ADDRESS],
  ]) {
    if (value) say(`using ${name}=${value}`);
  }
  const missing = Object.entries(need)
    .filter(([, n]) => n)
    .map(([k]) => k);
  if (missing.length) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-'));
    onCleanup(() => rm(dataDir, { recursive: true, force: true }));
    say(`starting embedded ${missing.join(', ')} (data in ${dataDir})`);
    const services: EmbeddedServices = await startEmbedded({ dataDir, need, temporalUi: false, log: (l) => say(l) });
    onCleanup(() => services.stop());
    process.env.MONGODB_URI ??= services.mongoUri;
    process.env.REDIS_URL ??= services.redisUrl;
    process.env.TEMPORAL_ADDRESS ??= services.temporalAddress;
  }
}

/** The API inside the bench process, on the bench's own database (`cortex_bench_<tag>`) and Redis prefix, both dropped at the end. */
export async function startBenchApp(llm: ScriptedOpenAI, onCleanup: OnCleanup): Promise<TestApp> {
  const tag = randomUUID().slice(0, 8);
  const app = await startTestApp({
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'bench',
    MONGODB_DB: `cortex_bench_${tag}`,
    // The bench is one API key sending a few hundred requests a minute; the limiter is not what it measures.
    RATE_LIMIT_POINTS: 1_000_000,
    // One workspace runs every section's load; its share of runs is what (t) measures, against its own API.
    WORKSPACE_MAX_ACTIVE_RUNS: 1_000_000,
    WORKSPACE_RUN_SHARE: 1_000_000,
  });
  onCleanup(() => app.close());
  onCleanup(() => dropRedisKeys(app));
  onCleanup(() => app.deps.db.dropDatabase());
  say(
    `API at ${app.url} (database ${app.config.MONGODB_DB}, Redis prefix ${app.config.REDIS_PREFIX}, task queue ${app.config.TEMPORAL_TASK_QUEUE})`,
  );
  return app;
}

/** SIGTERM and wait for the exit; a no-op once the process has exited. */
function stopperOf(child: ChildProcess): () => Promise<void> {
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  return async () => {
    if (exited) return;
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  };
}

/**
 * Starters of the compiled processes on the bench's stores: the platform worker (it runs in its own
 * process, as `npm run up` runs it beside the API; its /metrics on `workerMetricsPort`) and an API
 * process for the sections that measure one ((h), (i), (k), (n), (t)), stopped at the end at the latest.
 */
export function processStarters(
  app: TestApp,
  llm: ScriptedOpenAI,
  bundlePath: string,
  workerMetricsPort: number,
  onCleanup: OnCleanup,
): {
  startWorker(): Promise<Child>;
  startApi(env?: Record<string, string>): Promise<ServedApi & { stop(): Promise<void> }>;
} {
  const startWorker = () =>
    spawnWorkerProcess(
      app,
      {
        OPENAI_BASE_URL: llm.baseURL,
        OPENAI_API_KEY: 'bench',
        CORTEX_WORKFLOW_BUNDLE: bundlePath,
        WORKER_METRICS_PORT: String(workerMetricsPort),
      },
      'compiled',
    ).then((child) => ({ pid: child.pid, stop: stopperOf(child) }));
  const startApi = async (env: Record<string, string> = {}): Promise<ServedApi & { stop(): Promise<void> }> => {
    const [apiPort] = await freePorts(1);
    const child = await spawnApiProcess(
      app,
      apiPort,
      {
        OPENAI_BASE_URL: llm.baseURL,
        OPENAI_API_KEY: 'bench',
        RATE_LIMIT_POINTS: '1000000',
        // (h), (k) and (n) load one workspace as far as they go; (t) passes the share it measures.
        WORKSPACE_MAX_ACTIVE_RUNS: '1000000',
        WORKSPACE_RUN_SHARE: '1000000',
        ...env,
      },
      'compiled',
    );
    const stop = stopperOf(child);
    onCleanup(stop);
    const startRss = pidRss(child.pid);
    say(
      `compiled API process at http://127.0.0.1:${apiPort} (pid ${child.pid}, ${(startRss / MB).toFixed(0)} MB at start)`,
    );
    return { client: makeClient(`http://127.0.0.1:${apiPort}`), pid: child.pid, startRss, stop };
  };
  return { startWorker, startApi };
}
