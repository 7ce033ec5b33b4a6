import { createServer } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { loadConfig, productionProblem } from '../src/kernel/config.js';
import { AppError } from '../src/kernel/errors.js';
import { closeDeps, createDeps } from '../src/compose/deps.js';
import { FeedPartitionsMismatch } from '../src/kernel/feed.js';
import { createLogger } from '../src/kernel/logger.js';
import { upgradeOrExit } from '../src/releases/index.js';
import { reconcileOnStart } from '../src/reconcile/index.js';
import { createServices } from '../src/compose/services.js';
import { startTelemetry } from '../src/kernel/telemetry.js';
import { createApp } from './app.js';

/** How often every API looks for stored runs whose workflow has not started (runs.startPending). */
const START_SWEEP_MS = 10_000;

/** API entry point: connect, ensure bootstrap identity, listen, and shut down gracefully. */
async function main() {
  const config = loadConfig();
  // Memory under load (docs/operations.md, "Memory"): V8 reads its heap growing factor at each
  // full collection, so setting it before the app allocates applies it to the whole process.
  if (config.API_HEAP_GROWING_PERCENT > 0)
    setFlagsFromString(`--heap-growing-percent=${config.API_HEAP_GROWING_PERCENT}`);
  const unsafe = productionProblem(config);
  if (unsafe) exitWith(`cortex api: refusing to start: ${unsafe}`);
  const telemetry = await startTelemetry(config, 'api');
  const log = createLogger(config.LOG_LEVEL, { component: 'api' });
  const deps = await createDeps(config, log);
  const services = createServices(deps);
  await upgradeOrExit(deps, services, 'cortex api'); // data format and indexes (docs/operations.md, "Releases and upgrades")
  try {
    await services.auth.bootstrap();
  } catch (e) {
    // A bootstrap identity that cannot be reconciled with the store is a configuration problem: one line, no stack.
    if (e instanceof AppError) {
      await closeDeps(deps);
      exitWith(`cortex api: bootstrap failed: ${e.message}`);
    }
    throw e;
  }
  if (config.RECONCILE_SCHEDULES_ON_START) {
    // Receptors are the desired state of their Temporal Schedules: repair drift (in the background, logged).
    services.receptors
      .reconcileSchedules()
      .then((r) =>
        log.info(
          { checked: r.checked, created: r.created.length, removed: r.removed.length },
          'receptor schedules reconciled',
        ),
      )
      .catch((e: unknown) =>
        log.warn(
          { err: (e as Error).message },
          'receptor schedule reconcile failed; it runs again at the next start or as maintenance.schedule_reconcile',
        ),
      );
  }
  // Store and Temporal agree on which runs are open (after a restore they may not): background, bounded, logged.
  void reconcileOnStart(deps, services);
  // The search index is built from the store in the background, then follows the resource feed
  // (docs/search.md); /health reports its state, and a search waits for it only a bounded time.
  services.search.start();
  // Invokes answer 202 once the run is stored and start its workflow right after: runs whose start
  // did not land (an API that died in between, Temporal away for a while) are started by this sweep.
  const sweepStarts = () =>
    services.runs
      .startPending()
      .then((r) => {
        if (r.started) log.info(r, 'start sweep started stored runs');
      })
      .catch((e: unknown) => log.warn({ err: (e as Error).message }, 'start sweep failed; it runs again'));
  void sweepStarts();
  const sweep = setInterval(() => void sweepStarts(), START_SWEEP_MS);
  sweep.unref();
  const server = createServer(createApp(deps, services).callback());
  server.listen(config.PORT, config.HOST, () =>
    log.info({ url: `http://${config.HOST}:${config.PORT}` }, 'api listening'),
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'api stopping');
    server.close();
    server.closeAllConnections();
    clearInterval(sweep);
    // First turns this API was streaming are recorded as failed, so their runs retry them at once;
    // workflow starts in flight get a moment to land (a sweep of another API starts any that did not).
    await services.runs.drain();
    // The search syncer (Weaviate) gives its lease back, so another process takes over at once.
    await services.search.stop();
    await closeDeps(deps);
    await telemetry?.shutdown();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

function exitWith(line: string): never {
  console.error(line);
  process.exit(1);
}

main().catch((err: unknown) => {
  // A configuration problem is the operator's to fix: its message, without a stack.
  console.error(
    err instanceof Error && err.message.startsWith('Invalid configuration')
      ? `cortex api: ${err.message}`
      : err instanceof FeedPartitionsMismatch
        ? `cortex api: refusing to start: ${err.message}`
        : err,
  );
  process.exit(1);
});
