import * as wf from '@temporalio/workflow';
import { cancelSignal, statusQuery, type LiveStatus } from '../src/temporal/definitions.js';

/**
 * Records why a run ended, then rethrows so Temporal shows the run as failed or cancelled.
 * Shared by every run workflow: a cancellation is recorded from a non-cancellable scope
 * (the run's own scope is already cancelled); any other failure records the root cause
 * (an activity's or child workflow's own message, not the wrapper's).
 */
export async function recordFailure(
  err: unknown,
  cancelReason: string | undefined,
  record: (reason: string) => Promise<unknown>,
): Promise<never> {
  if (wf.isCancellation(err)) {
    await wf.CancellationScope.nonCancellable(() => record(`cancelled: ${cancelReason ?? 'cancelled'}`));
    throw err;
  }
  // A child workflow that failed in an activity is two wrappers deep: unwrap them all.
  let cause = err as Error;
  while ((cause instanceof wf.ActivityFailure || cause instanceof wf.ChildWorkflowFailure) && cause.cause)
    cause = cause.cause;
  await record(cause.message || 'run failed');
  throw err;
}

/**
 * The frame every job workflow shares: the `status` query and `cancel` signal, the live status
 * moved to completed (progress 100) when the body returns, and on a failure the reason recorded
 * through `fail` before the run ends failed. A continue-as-new passes through untouched.
 */
export async function trackedJob<T>(
  firstStep: string,
  body: (status: LiveStatus) => Promise<T>,
  fail: (reason: string) => Promise<unknown>,
): Promise<T> {
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: firstStep };
  let cancelReason: string | undefined;
  wf.setHandler(statusQuery, () => status);
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  try {
    const result = await body(status);
    status.status = 'completed';
    status.progress = 100;
    status.currentStep = 'completed';
    return result;
  } catch (err) {
    if (err instanceof wf.ContinueAsNew) throw err;
    status.status = 'failed';
    return recordFailure(err, cancelReason, fail);
  }
}
