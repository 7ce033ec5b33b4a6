import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { JobKindKey } from '../temporal/definitions.js';
import type { Logger } from '../kernel/logger.js';
import type { ReconcileStore } from './store.js';

/** What the reconcile reports (logged by the API at start). */
export interface ReconcileReport {
  /** Open jobs looked at, and running job workflows looked at. */
  jobsChecked: number;
  workflowsChecked: number;
  /** Jobs whose missing workflow was started again from the run's stored start. */
  restarted: string[];
  /** Jobs ended failed: their workflow is missing (and no start is stored) or ended without recording the end. */
  failed: string[];
  /** Workflows terminated: their job is not in the store. */
  terminated: string[];
  /** Workflows asked to cancel: their job ended a while ago (the run cleans up after itself, as after a user's cancel). */
  cancelled: string[];
  /** Looked at but left alone because Temporal did not answer (the next start looks again). */
  skipped: number;
}

/** What the reconcile is built from (src/reconcile/index.ts passes the API's services). */
export interface ReconcileDeps {
  store: ReconcileStore;
  temporal: Client;
  taskQueue: string;
  jobs: {
    finalize(
      workspaceId: string,
      jobId: string,
      patch: { status: 'failed'; failedReason: string; currentStep: string },
    ): Promise<boolean>;
  };
  runs: { startStored(jobId: string): Promise<boolean> };
  log: Logger;
  /** At most this many open jobs and this many running workflows are looked at. */
  limit: number;
  /** Jobs and workflows younger than this are left to the paths that own them (start sweep, the run itself). */
  graceMs: number;
}

/** The step a job failed by the reconcile shows (GET /v1/jobs/:id `current_step`). */
export const RECONCILED_STEP = 'reconciled at start';
/** How many Temporal calls run at once. */
const CONCURRENCY = 8;

/** A job id (src/kernel/ids.ts: UUIDs). */
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const isNotFound = (e: unknown): boolean => (e as { name?: string }).name === 'WorkflowNotFoundError';

/** Maps `items` through `fn` with at most CONCURRENCY calls in flight. */
async function eachLimited<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}

/**
 * Makes the store and Temporal agree at start (docs/operations.md, "Backup and restore"): after a
 * restore the two come from snapshots taken moments apart, and either may hold runs the other
 * lacks. Bounded: `limit` open jobs (read per workspace and state from an index) and `limit`
 * running workflows of this task queue, one describe each, CONCURRENCY at a time.
 *
 * - An open job whose workflow is missing is started again from its stored start (runs.startStored,
 *   what the start sweep does) or, without one, ends failed with the reason.
 * - An open job whose workflow has closed (it ended without recording its end) ends failed with the
 *   workflow's status in the reason.
 * - A running job workflow (one carrying the JobKind search attribute, its id a job id) whose job is
 *   not in the store is terminated with the reason; one whose job ended more than `graceMs` ago is
 *   asked to cancel, as a user's cancel asks it. A receptor's fire workflows store their job
 *   themselves and are never terminated for a missing one.
 * Workflows are looked at first, so a job whose workflow this terminates is then ended too.
 */
export async function reconcileRuns(d: ReconcileDeps): Promise<ReconcileReport> {
  const report: ReconcileReport = {
    jobsChecked: 0,
    workflowsChecked: 0,
    restarted: [],
    failed: [],
    terminated: [],
    cancelled: [],
    skipped: 0,
  };
  const before = Date.now() - d.graceMs;
  const describe = (id: string): Promise<WorkflowExecutionDescription | 'missing' | 'unknown'> =>
    d.temporal.workflow
      .getHandle(id)
      .describe()
      .catch((e: unknown) => (isNotFound(e) ? 'missing' : 'unknown'));

  // 1. Job workflows Temporal runs.
  const running: { id: string; start: Date }[] = [];
  const query = `ExecutionStatus = 'Running' AND TaskQueue = '${d.taskQueue.replace(/'/g, "\\'")}'`;
  for await (const wf of d.temporal.workflow.list({ query, pageSize: Math.min(d.limit, 1000) })) {
    if (wf.typedSearchAttributes.get(JobKindKey) === undefined) continue;
    if (wf.startTime.getTime() < before) running.push({ id: wf.workflowId, start: wf.startTime });
    if (running.length >= d.limit) break;
  }
  report.workflowsChecked = running.length;
  const jobIdOf = (workflowId: string) => (workflowId.startsWith('fire-') ? workflowId.slice(5) : workflowId);
  const known = await d.store.jobsByIds(running.map((w) => jobIdOf(w.id)));
  await eachLimited(running, async (wf) => {
    const job = known.get(jobIdOf(wf.id));
    // Only a workflow whose id is a job id (a UUID) is a job's own workflow: a receptor's fire workflows
    // (`fire-<job id>`, `receptor-fire-<receptor>-<time>` started by its Schedule) store their job themselves.
    const orphan = !job && JOB_ID.test(wf.id);
    const over =
      job !== undefined &&
      (job.status === 'completed' || job.status === 'failed') &&
      job.finishedAt !== null &&
      job.finishedAt.getTime() < before;
    if (!orphan && !over) return;
    const handle = d.temporal.workflow.getHandle(wf.id);
    try {
      if (orphan) {
        await handle.terminate(
          'reconciled at start: its job is not in the store (restored from a backup taken before the job was stored, or the job was deleted)',
        );
        report.terminated.push(wf.id);
      } else {
        // The job's end is sticky; the run is asked to stop as a user's cancel asks it, so it closes
        // its interventions and ends its children itself.
        await handle.cancel();
        report.cancelled.push(wf.id);
      }
    } catch (e) {
      if (!isNotFound(e)) report.skipped++;
    }
  });
  // 2. Jobs the store holds open (after 1., so a job whose workflow 1. ended is seen ended).
  const open = (await d.store.openJobs(d.limit)).filter((j) => j.createdAt.getTime() < before);
  report.jobsChecked = open.length;
  await eachLimited(open, async (job) => {
    const ids = job.receptorId ? [job.id, `fire-${job.id}`] : [job.id];
    const found = await Promise.all(ids.map(describe));
    if (found.some((f) => f === 'unknown')) return void report.skipped++;
    if (found.some((f) => typeof f === 'object' && f.status.name === 'RUNNING')) return;
    const closed = found.find((f): f is WorkflowExecutionDescription => typeof f === 'object');
    let reason: string;
    if (closed) {
      reason = `its workflow ended (${closed.status.name.toLowerCase()}) without recording the run's end (reconciled at start, as after a restore from a backup)`;
    } else {
      if (await d.runs.startStored(job.id)) {
        report.restarted.push(job.id);
        return;
      }
      reason =
        'its workflow does not exist in Temporal (a restore from a backup taken before the run started, or Temporal lost it); start the run again';
    }
    const applied = await d.jobs.finalize(job.workspaceId, job.id, {
      status: 'failed',
      failedReason: reason,
      currentStep: RECONCILED_STEP,
    });
    if (applied) report.failed.push(job.id);
  });

  return report;
}
