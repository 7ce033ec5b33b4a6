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
