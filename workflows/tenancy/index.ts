import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  // About a quarter of an hour of retries; then the deletion is `failed` with the reason (delete again to resume).
  retry: { initialInterval: '5s', maximumInterval: '2m', maximumAttempts: 10 },
});

/** The retention sweep (docs/operations.md, "Retention"), started by the `retention-sweep` Temporal Schedule. */
export async function retentionSweep(): Promise<{ workspaces: number; deleted: number }> {
  return steps.sweepRetention();
}

/**
 * Deletes a workspace and everything it owns (docs/operations.md, "Deleting a workspace"): each step
 * in order, each in bounded parts until it reports done. Durable: a worker that dies resumes at the
 * step and part it was in (every part is idempotent); activities retry without limit.
 */
export async function workspaceErase(input: { deletionId: string; workspaceId: string }): Promise<void> {
  try {
    // The steps are the service's (src/tenancy/model.ts ERASE_STEPS), by index; the last says so.
    for (let step = 0; ; step++) {
      let last = false;
      for (let part = 0; ; part++) {
        const r = await steps.eraseWorkspaceStep(input.deletionId, input.workspaceId, step);
        last = r.last;
        if (r.done) break;
        // A long deletion keeps its history short.
        if (part > 0 && part % 200 === 0 && wf.workflowInfo().continueAsNewSuggested)
          await wf.continueAsNew<typeof workspaceErase>(input);
      }
      if (last) break;
    }
  } catch (e) {
    await steps.failWorkspaceErase(input.deletionId, (e as Error).message);
    throw e;
  }
}
