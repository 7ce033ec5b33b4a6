/**
 * Start-up reconcile of runs (docs/operations.md, "Backup and restore"): the one door of this area.
 * The API calls `reconcileOnStart` once at start (api/server.ts), in the background; it makes the
 * store's open jobs and Temporal's running job workflows agree (src/reconcile/service.ts).
 */
import type { Deps } from '../compose/deps.js';
import type { Services } from '../compose/services.js';
import { reconcileRuns, type ReconcileReport } from './service.js';
import { createReconcileStore } from './store.mongo.js';

export { reconcileRuns, RECONCILED_STEP } from './service.js';

/** Runs the reconcile when RECONCILE_RUNS_ON_START is on; logs its outcome, never throws. */
export async function reconcileOnStart(deps: Deps, services: Pick<Services, 'jobs' | 'runs'>): Promise<void> {
  const c = deps.config;
  if (!c.RECONCILE_RUNS_ON_START) return;
  try {
    const r: ReconcileReport = await reconcileRuns({
      store: createReconcileStore(deps.db),
      temporal: deps.temporal.client,
      taskQueue: c.TEMPORAL_TASK_QUEUE,
      jobs: services.jobs,
      runs: services.runs,
      log: deps.log,
      limit: c.RECONCILE_RUNS_LIMIT,
      graceMs: c.RECONCILE_RUNS_GRACE_S * 1000,
    });
    const changed = r.restarted.length + r.failed.length + r.terminated.length + r.cancelled.length;
    deps.log[changed ? 'warn' : 'info'](
      {
        jobsChecked: r.jobsChecked,
        workflowsChecked: r.workflowsChecked,
        restarted: r.restarted,
        failed: r.failed,
        terminated: r.terminated,
        cancelled: r.cancelled,
        skipped: r.skipped,
      },
      changed ? 'runs reconciled at start: store and Temporal disagreed' : 'runs reconciled at start: nothing to do',
    );
  } catch (e) {
    deps.log.warn({ err: (e as Error).message }, 'run reconcile at start failed; it runs again at the next start');
  }
}
