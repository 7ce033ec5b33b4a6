import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { ReconcileReport } from '../../src/usage/index.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '10s', maximumInterval: '2m', maximumAttempts: 3 },
});

/**
 * The usage reconciler (docs/usage.md), started by the `usage-reconcile` Temporal Schedule: the
 * counters and rollups are made what the usage ledger says; its result is the drift it found.
 */
export async function usageReconcile(): Promise<ReconcileReport> {
  return steps.reconcileUsage();
}
