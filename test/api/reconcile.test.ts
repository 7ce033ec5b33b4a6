import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { JobDoc } from '../../src/jobs/model.js';
import { reconcileRuns, RECONCILED_STEP } from '../../src/reconcile/index.js';
import { createReconcileStore } from '../../src/reconcile/store.mongo.js';
import { JobKindKey, WorkspaceIdKey } from '../../src/temporal/definitions.js';
import { buildWorkspace, useTestApp } from '../support/app.js';

/*
 * The start-up reconcile (src/reconcile) against the real store and Temporal: after a restore the
 * two may disagree, and each disagreement is put right with a reason. No worker polls this app's
 * task queue, so a workflow started here stays running until the reconcile (or the test) ends it.
 */
const app = useTestApp();
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

async function storeJob(workspaceId: string, patch: Partial<JobDoc> = {}): Promise<string> {
  const id = randomUUID();
  const at = patch.createdAt ?? minutesAgo(5);
  await app.deps.db.collection<JobDoc>('jobs').insertOne({
    _id: id,
    workspaceId,
    brainId: null,
    kind: 'neuron',
    status: 'running',
    progress: 5,
    currentStep: 'model turn 1',
    failedReason: null,
    result: null,
    waitingFor: null,
    neuronId: null,
    pathwayId: null,
    receptorId: null,
    traceId: null,
    parentJobId: null,
    clientNonce: null,
    createdBy: null,
    createdAt: at,
    finishedAt: null,
    updatedAt: at,
    ...patch,
  });
  return id;
}

async function startWorkflow(id: string, workspaceId: string): Promise<void> {
  await app.deps.temporal.client.workflow.start('neuronRun', {
    taskQueue: app.config.TEMPORAL_TASK_QUEUE,
    workflowId: id,
    args: [],
    typedSearchAttributes: [
      { key: JobKindKey, value: 'neuron' },
      { key: WorkspaceIdKey, value: workspaceId },
    ],
  });
}

const run = (graceMs: number) =>
  reconcileRuns({
    store: createReconcileStore(app.deps.db),
    temporal: app.deps.temporal.client,
    taskQueue: app.config.TEMPORAL_TASK_QUEUE,
    jobs: app.services.jobs,
    runs: app.services.runs,
    log: app.deps.log,
    limit: 1000,
    graceMs,
  });

const statusOf = async (id: string) => (await app.deps.temporal.client.workflow.getHandle(id).describe()).status.name;

describe('start-up reconcile of runs', () => {
  it('ends a job whose workflow is missing or closed, terminates a workflow whose job is missing, asks one whose job long ended to cancel, and leaves the agreeing and the young alone', async () => {
    const ws = await buildWorkspace(app);
    // A job whose workflow Temporal never had (and no stored start): failed with the reason.
    const noWorkflow = await storeJob(ws.workspaceId);
    // A job whose workflow was terminated without the job hearing of it: failed, naming the status.
    const closed = await storeJob(ws.workspaceId);
    await startWorkflow(closed, ws.workspaceId);
    await app.deps.temporal.client.workflow.getHandle(closed).terminate('operator');
    // A workflow whose job is not in the store: terminated.
    const orphan = randomUUID();
    await startWorkflow(orphan, ws.workspaceId);
    // A workflow whose job ended a while ago: asked to cancel (no worker here, so it stays open with the request).
    const ended = await storeJob(ws.workspaceId, {
      status: 'completed',
      progress: 100,
      currentStep: 'done',
      finishedAt: new Date(Date.now() - 1_000),
    });
    await startWorkflow(ended, ws.workspaceId);
    // Agreeing: an open job with its running workflow.
    const agreeing = await storeJob(ws.workspaceId);
    await startWorkflow(agreeing, ws.workspaceId);

    // The workflows were started just now: with a grace of 0 they count as old enough.
    const report = await run(0);
    expect(report.failed.sort()).toEqual([noWorkflow, closed].sort());
    expect(report.terminated).toEqual([orphan]);
    expect(report.cancelled).toEqual([ended]);
    expect(report.restarted).toEqual([]);
    expect(report.skipped).toBe(0);

    const job = (id: string) => app.deps.db.collection<JobDoc>('jobs').findOne({ _id: id });
    expect(await job(noWorkflow)).toMatchObject({ status: 'failed', currentStep: RECONCILED_STEP });
    expect((await job(noWorkflow))!.failedReason).toMatch(/does not exist in Temporal/);
    expect((await job(closed))!.failedReason).toMatch(/its workflow ended \(terminated\)/);
    expect(await statusOf(orphan)).toBe('TERMINATED');
    const history = await app.deps.temporal.client.workflow.getHandle(ended).fetchHistory();
    expect(history.events?.some((e) => e.workflowExecutionCancelRequestedEventAttributes)).toBe(true);
    expect(await statusOf(agreeing)).toBe('RUNNING');
    expect((await job(agreeing))!.status).toBe('running');
    // A second run with a grace: nothing left to do, and a job younger than the grace (stored just
    // now, its workflow not started yet) is left to the start sweep.
    const young = await storeJob(ws.workspaceId, { createdAt: new Date(), status: 'pending' });
    const again = await run(60_000);
    expect(again.failed).toEqual([]);
    expect(again.terminated).toEqual([]);
    await app.deps.temporal.client.workflow.getHandle(ended).terminate('test over');
    expect((await job(young))!.status).toBe('pending');
    await app.deps.temporal.client.workflow.getHandle(agreeing).terminate('test over');
  });
});
