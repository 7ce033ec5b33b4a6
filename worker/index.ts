import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { registry } from '../src/kernel/metrics.js';
import { NativeConnection, Runtime, Worker, type InjectedSinks, type WorkerOptions } from '@temporalio/worker';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import { activeTelemetry, startTelemetry } from '../src/kernel/telemetry.js';
import { createActivities } from '../activities/index.js';
import { loadConfig, productionProblem, type Config } from '../src/kernel/config.js';
import { closeDeps, createDeps, type Deps } from '../src/compose/deps.js';
import { FeedPartitionsMismatch } from '../src/kernel/feed.js';
import { createLogger } from '../src/kernel/logger.js';
import { upgradeOrExit } from '../src/releases/index.js';
import { createServices } from '../src/compose/services.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
/**
 * Workflow interceptor modules every bundle of workflowsPath must include (OpenTelemetry spans,
 * workflows/interceptors.ts): a prebuilt bundle gets them from `bundleWorkflowCode`.
 */
export const workflowInterceptorModules = [fileURLToPath(new URL('../workflows/interceptors.ts', import.meta.url))];
/** How every bundle of the workflows is made: prebuilt (scripts/build.ts, test setup), at worker start, for replay. */
export const workflowBundleOptions = { workflowsPath, workflowInterceptorModules };

/**
 * The sink through which workflow spans leave the sandbox: to this process's exporter when
 * tracing is on (src/kernel/telemetry.ts), else dropped. Always registered, because every bundle has the
 * workflow interceptors (see workflows/interceptors.ts for why they are never switched off).
 */
function workflowSpanSinks(): InjectedSinks<OpenTelemetrySinks> {
  const telemetry = activeTelemetry();
  return {
    exporter: telemetry
      ? makeWorkflowExporter(telemetry.exporter, telemetry.resource)
      : { export: { fn: () => undefined } },
  };
}

/**
 * What a replay worker needs to replay histories of this worker's workflows: the same workflow
 * code with the same workflow interceptors (replaying without them is a non-determinism error).
 */
export function replayOptions(): Pick<WorkerOptions, 'workflowsPath' | 'interceptors' | 'sinks'> {
  return { workflowsPath, interceptors: { workflowModules: workflowInterceptorModules }, sinks: workflowSpanSinks() };
}

/**
 * Builds a worker over an existing dependency bag. A prebuilt bundle (CORTEX_WORKFLOW_BUNDLE,
 * produced once by the test setup or a production build) is used when given; otherwise the
 * workflows are bundled from source at start.
 */
export async function createWorker(
  deps: Deps,
  opts: { bundlePath?: string; taskQueue?: string } = {},
): Promise<{ worker: Worker; connection: NativeConnection; services: ReturnType<typeof createServices> }> {
  const connection = await NativeConnection.connect({ address: deps.config.TEMPORAL_ADDRESS });
  const services = createServices(deps);
  // Every worker process follows the webhook outbox too (docs/webhooks.md, "Delivery guarantees").
  services.webhooks.follow();
  const bundlePath = opts.bundlePath ?? process.env.CORTEX_WORKFLOW_BUNDLE;
  const source: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> =
    bundlePath && existsSync(bundlePath) ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath };
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: opts.taskQueue ?? deps.config.TEMPORAL_TASK_QUEUE,
    activities: createActivities({ services }),
    ...source,
    // Activity spans continue the workflow's trace; their log lines carry its ids.
    interceptors: {
      ...(source.workflowsPath ? { workflowModules: workflowInterceptorModules } : {}),
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: workflowSpanSinks(),
    shutdownGraceTime: '2s',
  });
  return { worker, connection, services };
}

async function main(config: Config = loadConfig()) {
  const unsafe = productionProblem(config);
  if (unsafe) {
    console.error(`cortex worker: refusing to start: ${unsafe}`);
    process.exit(1);
  }
  // The SDK's own metrics (workflow and activity task latencies, slots, polls), served by its core;
  // must be installed before the first connection is made.
  if (config.TEMPORAL_METRICS_ADDRESS)
    Runtime.install({
      telemetryOptions: { metrics: { prometheus: { bindAddress: config.TEMPORAL_METRICS_ADDRESS } } },
    });
  const telemetry = await startTelemetry(config, 'worker');
  const log = createLogger(config.LOG_LEVEL, { component: 'worker' });
  const deps = await createDeps(config, log);
  const { worker, connection, services } = await createWorker(deps);
  await upgradeOrExit(deps, services, 'cortex worker'); // data format and indexes (docs/operations.md, "Releases and upgrades")
  // The usage reconciler runs on a Temporal Schedule of its own, created once (docs/usage.md); a
  // start that finds a workspace's counters not built (an upgrade, a Redis that lost them) runs it
  // at once (budgets and usage routes read the ledger until it has).
  services.usageReconciler
    .ensureSchedule()
    .then(() => services.usageReconciler.rebuildIfNeeded())
    .catch((e: unknown) =>
      log.warn(
        { err: (e as Error).message },
        'could not create the usage-reconcile schedule; it is tried again at the next start',
      ),
    );
  // The retention sweep runs on its own Temporal Schedule too (docs/operations.md, Retention).
  services.tenancy
    .ensureSchedule()
    .catch((e: unknown) =>
      log.warn(
        { err: (e as Error).message },
        'could not create the retention-sweep schedule; it is tried again at the next start',
      ),
    );
  const stop = () => {
    log.info('worker stopping');
    worker.shutdown();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // The worker's own metrics (runs it finishes, model first-token latency), for Prometheus to scrape.
  const metricsServer = config.WORKER_METRICS_PORT
    ? createServer((_req, res) => {
        void registry.metrics().then((body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body));
      }).listen(config.WORKER_METRICS_PORT, config.HOST)
    : undefined;
  log.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  await worker.run();
  // A listening server would keep the process alive after SIGTERM: it closes with the worker.
  metricsServer?.closeAllConnections();
  await new Promise((r) => (metricsServer ? metricsServer.close(r) : r(undefined)));
  await connection.close();
  // The search syncer (Weaviate), if this worker was it, gives its lease back: another process takes over at once.
  await services.search.stop();
  await closeDeps(deps);
  await telemetry?.shutdown();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    // A configuration the other processes contradict is the operator's to fix: one line, no stack.
    console.error(err instanceof FeedPartitionsMismatch ? `cortex worker: refusing to start: ${err.message}` : err);
    process.exit(1);
  });
}
