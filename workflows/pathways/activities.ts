import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';

/** The pathway interpreter's activities: node I/O, interventions, the run's start and end. */
export const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});
// Expression evaluation and stream/progress writes are short: local activities avoid a server
// round trip per node (the per-node overhead the benchmark measures).
export const local = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 10 },
});
