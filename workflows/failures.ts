import * as wf from '@temporalio/workflow';

/**
 * Records why a run ended, then rethrows so Temporal shows the run as failed or cancelled.
 * Shared by every run workflow: a cancellation is recorded from a non-cancellable scope
 * (the run's own scope is already cancelled); any other failure records the root cause
 * (an activity's or child workflow's own message, not the wrapper's).
 */
export async function recordFailure(err: unknown, cancelReason: string | undefined, record: (reason: string) => Promise<unknown>): Promise<never> {
  if (wf.isCancellation(err)) {
    await wf.CancellationScope.nonCancellable(() => record(`cancelled: ${cancelReason ?? 'cancelled'}`));
    throw err;
  }
  const cause = (err instanceof wf.ActivityFailure || err instanceof wf.ChildWorkflowFailure) && err.cause ? err.cause : (err as Error);
  await record(cause.message || 'run failed');
  throw err;
}
