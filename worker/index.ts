import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { registry } from '../src/metrics.js';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { loadConfig, productionProblem, type Config } from '../src/config.js';
import { closeDeps, createDeps, type Deps } from '../src/deps.js';
import { createLogger } from '../src/logger.js';
import { createServices } from '../src/services/index.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Builds a worker over an existing dependency bag. A prebuilt bundle (CORTEX_WORKFLOW_BUNDLE,
 * produced once by the test setup or a production build) is used when given; otherwise the
 * workflows are bundled from source at start.
 */
export async function createWorker(deps: Deps, opts: { bundlePath?: string; taskQueue?: string } = {}): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: deps.config.TEMPORAL_ADDRESS });
  const services = createServices(deps);
  const bundlePath = opts.bundlePath ?? process.env.CORTEX_WORKFLOW_BUNDLE;
  const source: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> = bundlePath && existsSync(bundlePath)
    ? { workflowBundle: { codePath: bundlePath } }
    : { workflowsPath };
  const worker = await Worker.create({
    connection, namespace: deps.config.TEMPORAL_NAMESPACE, taskQueue: opts.taskQueue ?? deps.config.TEMPORAL_TASK_QUEUE,
    activities: createActivities({ services }), ...source,
    shutdownGraceTime: '2s',
  });
  return { worker, connection };
}

async function main(config: Config = loadConfig()) {
  const unsafe = productionProblem(config);
  if (unsafe) {
    console.error(`cortex worker: refusing to start: ${unsafe}`);
    process.exit(1);
  }
  const log = createLogger(config.LOG_LEVEL, { component: 'worker' });
  const deps = await createDeps(config, log);
  const { worker, connection } = await createWorker(deps);
  const stop = () => { log.info('worker stopping'); worker.shutdown(); };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  if (config.WORKER_METRICS_PORT) {
    // The worker's own metrics (runs it finishes, model first-token latency), for Prometheus to scrape.
    createServer((_req, res) => {
      void registry.metrics().then((body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body));
    }).listen(config.WORKER_METRICS_PORT, config.HOST);
  }
  log.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  await worker.run();
  await connection.close();
  await closeDeps(deps);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
