import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { createBus } from '../../src/kernel/events.js';
import type { Scope } from '../../src/kernel/scope.js';
import { createJobRepo, createJobService, type JobRepo } from '../../src/jobs/index.js';
import { useTestApp } from '../support/app.js';

/**
 * A place given back while the workspace's queue is being drained (against the real store and
 * Temporal): the drain under way counted the places before the run ended and stops, and the queued
 * run must still start at once, not at the next run's end or the start sweep (10 s). The store is
 * the real one; its count of places only answers late, so the run's end lands inside the drain.
 */
const app = useTestApp({ WORKSPACE_RUN_SHARE: 1, WORKSPACE_MAX_ACTIVE_RUNS: 1, FIRST_TURN_IN_API: false });

it('a run queued behind the only place starts as soon as that place is given back during a drain', async () => {
  const real = createJobRepo(app.deps.db);
  // The first count of places is answered only when the test opens the gate (after the run ended).
  let counting: () => void = () => undefined;
  const counted = new Promise<void>((r) => (counting = r));
  let open: () => void = () => undefined;
  const gate = new Promise<void>((r) => (open = r));
  let first = true;
  const repo: JobRepo = {
    ...real,
    countActiveRuns: async (...args) => {
      const n = await real.countActiveRuns(...args);
      if (first) {
        first = false;
        counting();
        await gate;
      }
      return n;
    },
  };
  const jobs = createJobService({
    repo,
    config: app.config,
    streams: app.deps.streams,
    temporal: app.deps.temporal.client,
    bus: createBus(),
    log: app.deps.log,
  });
  const workspaceId = randomUUID();
  const scope: Scope = { workspaceId, userId: null, apiKeyId: null, roles: ['workspace_admin'], credential: 'system' };
  // The running run holds the workspace's one place; the next one waits in the queue.
  const holder = randomUUID();
  await jobs.create(scope, { id: holder, kind: 'neuron' });
  const queuedId = randomUUID();
  const { job: queued } = await jobs.create(scope, { id: queuedId, kind: 'neuron', queued: true });
  // Storing the queued run's start asks for a drain: it finds the queued run and counts the places (1 of 1).
  await jobs.startWorkflow(queued, 'neuronRun', [{ jobId: queuedId }], 'queue-drain test');
  await counted;
  // The running run ends while that count is on its way: its own ask for a drain meets the one under way.
  await jobs.finalize(workspaceId, holder, { status: 'completed', result: null });
  // The drain under way answers "full" (what it read before the end) and stops.
  open();
  await expect.poll(() => jobs.workflowExists(queuedId), { timeout: 5_000, interval: 100 }).toBe(true);
  await app.deps.temporal.client.workflow.getHandle(queuedId).terminate('test over');
});
