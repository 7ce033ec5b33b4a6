import { bestEffort } from '../kernel/best-effort.js';
import { type JobRecord as Job, TERMINAL_STATES } from '../jobs/index.js';
import type { StoredStart } from './model.js';
import type { RunContext, RunDeps } from './shared.js';

/** When an invoke's background workflow start is tried (ms after the previous try). */
const START_RETRIES_MS = [0, 250, 1_000];

/** The workflow starts of stored runs: this process's own in flight, and the sweep that finds the ones left behind. */
export const createStartSteps = (ctx: RunContext) => ({
  /**
   * The start sweep (every API, on start and every START_SWEEP_MS): runs stored at least
   * `minAgeMs` ago whose workflow start no sweep has confirmed. A workflow that exists is
   * confirmed (each run is looked at once); one that does not is started from the stored start
   * (an API died between its 202 and the start, or Temporal refused it for a while).
   */
  startPending: (opts: { minAgeMs?: number } = {}): Promise<{ checked: number; started: number }> =>
    startPending(ctx.d, opts),
  /** Starts one never-started job from its stored start (GET status of a long-pending job). False when it has none or the start fails. */
  startStored: async (jobId: string): Promise<boolean> => {
    const [start, job] = await Promise.all([ctx.d.runLog.storedStart(jobId), ctx.d.jobs.repoFind(jobId)]);
    return start !== null && job !== null && startFrom(ctx.d, job, start);
  },
  /** API shutdown: first turns in flight are recorded as failed, workflow starts in flight get a moment to land. */
  drain: async (): Promise<void> => {
    await Promise.all([
      ctx.d.firstTurns.drain(),
      Promise.race([Promise.allSettled([...ctx.starting]), new Promise((r) => setTimeout(r, 2_000))]),
    ]);
  },
});

/** Whether a stored run still wants its workflow: a job that ended before its start (cancelled meanwhile) never starts. */
const wantsStart = (job: Job | null): job is Job => job !== null && !TERMINAL_STATES.includes(job.status);

/** Starts a stored run's workflow (a start that exists already counts); false, logged, when Temporal refuses. */
async function startFrom(d: RunDeps, job: Job, start: StoredStart): Promise<boolean> {
  try {
    await d.jobs.startWorkflow(job, start.workflowType, start.args, start.summary, { failJob: false });
    return true;
  } catch (e) {
    d.log.warn({ jobId: job._id, err: (e as Error).message }, 'workflow start failed; it is tried again');
    return false;
  }
}

/**
 * Starts a stored run's workflow in the background, retrying a start Temporal refused a few
 * times; after that the sweep (startPending) goes on trying, so the run is never lost.
 */
export function startSoon(ctx: RunContext, job: Job, start: StoredStart): void {
  const { d } = ctx;
  const p = (async () => {
    // After this turn of the event loop: the client's encoding of the start (payloads, search
    // attributes) would otherwise run before the 202 is written.
    await new Promise((r) => setImmediate(r));
    for (const wait of START_RETRIES_MS) {
      if (wait) {
        await new Promise((r) => setTimeout(r, wait));
        // A run cancelled while its start was being retried is not started (cancel found no
        // workflow to cancel); the sweep is told it needs none.
        const now = await d.jobs.repoFind(job._id).catch(() => job);
        if (!wantsStart(now))
          return void (await bestEffort(
            d.log,
            'confirming a cancelled run needs no start',
            d.runLog.confirmStart(job._id),
          ));
      }
      if (await startFrom(d, job, start)) return;
    }
    d.log.warn({ jobId: job._id }, 'workflow start still failing; the start sweep retries it');
  })().finally(() => ctx.starting.delete(p));
  ctx.starting.add(p);
}

async function startPending(d: RunDeps, opts: { minAgeMs?: number }): Promise<{ checked: number; started: number }> {
  const due = await d.runLog.unconfirmedStarts(new Date(Date.now() - (opts.minAgeMs ?? 10_000)));
  let started = 0;
  for (const r of due) {
    const job = await d.jobs.repoFind(r.jobId);
    if (wantsStart(job)) {
      const exists = await d.jobs.workflowExists(r.jobId);
      if (exists === null) continue; // Temporal did not answer: the next sweep looks again
      if (!exists) {
        if (!(await startFrom(d, job, r.start))) continue;
        started++;
        d.log.info({ jobId: r.jobId }, 'started a stored run whose workflow had not started');
      }
    }
    await d.runLog.confirmStart(r.jobId);
  }
  // Runs waiting in their workspace's queue whose place came while no starter was told (one died).
  started += await d.jobs.drainQueues();
  return { checked: due.length, started };
}
