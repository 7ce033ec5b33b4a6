/**
 * The bare baseline workflow of `npm run bench` (scripts/bench.ts), bundled on its own and run
 * by its own worker on its own task queue, next to the platform's worker on the same Temporal
 * server. It is the floor the platform's figures are compared with: one workflow, one activity.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { BenchActivities } from './bare-activities.js';

// Default retry policy; the echo never fails, so no retry ever happens.
const { benchEcho } = proxyActivities<BenchActivities>({ startToCloseTimeout: '30 seconds' });

/** One trivial activity and nothing else: start → workflow task → activity → workflow task → done. */
export async function bareOneActivity(): Promise<string> {
  return benchEcho('ok');
}
