/**
 * Retention (docs/operations.md, "Retention"): with short windows, expired jobs, traces with their
 * engrams, and usage rows whose hours are rolled up are gone from every route and from the store
 * (and Redis); recent ones are untouched; the workspace's usage totals are unchanged.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { periodKey, createUsageCounters } from '../../src/usage/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

const { app, llm } = usePlatform();
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function run(ws: Ws, neuronId: string, message: string) {
  const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message });
  expect(inv.status).toBe(202);
  const jobId = String(inv.body.job_id);
  const job = await settleJob(app, ws.key, jobId);
  expect(job.status, String(job.failedReason)).toBe('completed');
  return { jobId, traceId: String(inv.body.trace_id) };
}

const DAY = 86_400_000;

describe('retention', () => {
  it('deletes what is past its window everywhere and keeps the rest and the usage totals', async () => {
    llm.setDefault(() => ({ chunks: ['ok'], usage: { prompt_tokens: 3, completion_tokens: 2 } }));
    const ws = await buildWorkspace(app);
    const neuronId = String(
      (
        await app.post('/v1/neurons', ws.key, {
          name: 'kept',
          brain_id: ws.brainId,
          neuron_config: { model: 'openai/gpt-4o-mini' },
        })
      ).body.id,
    );
    const old = await run(ws, neuronId, 'old');
    const recent = await run(ws, neuronId, 'recent');
    const db = app.deps.db;
    // The old run happened five days ago: its job, trace, engrams and usage rows say so.
    const then = new Date(Date.now() - 5 * DAY);
    await db
      .collection('jobs')
      .updateMany({ _id: old.jobId } as never, { $set: { finishedAt: then, createdAt: then } });
    const oldTrace = await db.collection('traces').findOne({ workspaceId: ws.workspaceId, traceId: old.traceId });
    expect(oldTrace).not.toBeNull();
    await db.collection('traces').updateOne({ _id: oldTrace!._id }, { $set: { updatedAt: then, createdAt: then } });
    await db
      .collection('usage_ledger')
      .updateMany({ workspaceId: ws.workspaceId, jobId: old.jobId }, { $set: { at: then } });
    // The reconciler rolls the old hour up (as its schedule did then).
    await app.services.usageReconciler.workspace(ws.workspaceId, new Date(then.getTime() + 3 * 3_600_000));
    const window = `startDate=${new Date(Date.now() - 10 * DAY).toISOString()}&endDate=${new Date(Date.now() + DAY).toISOString()}`;
    const usage = async () => (await app.get(`/v1/usage/${ws.workspaceId}?${window}`, ws.key)).body;
    // The spend counters (budgets, share links) as a rebuild from the whole ledger makes them.
    const counters = createUsageCounters(app.deps.redis, app.config.REDIS_PREFIX);
    const month = periodKey('month', new Date());
    const fields = ['all:tokens', 'all:cost', `${month}:tokens`, `${month}:cost`];
    const spend = async () => {
      const pick = (h: Record<string, string>) => fields.map((f) => Number(h[f] ?? 0));
      return {
        workspace: pick(await counters.spendHash(ws.workspaceId, 'workspace', null)),
        neuron: pick(await counters.spendHash(ws.workspaceId, 'neuron', neuronId)),
      };
    };
    /** Redis loses the workspace's counters; the reconciler then rebuilds them in full from the store. */
    const loseCountersAndRebuild = async () => {
      const keys = await app.deps.redis.keys(`${app.config.REDIS_PREFIX}usage:{${ws.workspaceId}}:*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const k of keys) await app.deps.redis.del(k);
      expect(await counters.isBuilt(ws.workspaceId)).toBe(false);
      const r = await app.services.usageReconciler.workspace(ws.workspaceId);
      expect(r.fullRebuilds).toBe(1);
    };
    // (The old rows were counted in this hour's counters when written, then moved five days back: a
    // rebuild from the ledger first, so the figures compared below are the ledger's.)
    await loseCountersAndRebuild();
    const before = await usage();
    expect((before as { totalTokens: number }).totalTokens).toBeGreaterThan(0);
    const spentBefore = await spend();
    const ledgerTokens = (await db.collection('usage_ledger').find({ workspaceId: ws.workspaceId }).toArray()).reduce(
      (a, r) => a + Number(r.totalTokens),
      0,
    );
    expect(ledgerTokens).toBeGreaterThan(0);
    expect(spentBefore.workspace[0]).toBe(ledgerTokens);
    expect(spentBefore.neuron[0]).toBe(ledgerTokens);
    const oldRows = await db
      .collection('usage_ledger')
      .countDocuments({ workspaceId: ws.workspaceId, jobId: old.jobId });
    expect(oldRows).toBeGreaterThan(0);
    const oldStream = await app.deps.redis.exists(app.deps.streams.keys.job(old.jobId));
    expect(oldStream).toBe(1);

    // Ended interventions and finished webhook deliveries of five days ago; a pending one stays.
    const row = (id: string, extra: Record<string, unknown>) => ({ _id: id, workspaceId: ws.workspaceId, ...extra });
    const ids = { answered: randomUUID(), pending: randomUUID(), oldDelivery: randomUUID(), newDelivery: randomUUID() };
    await db
      .collection('interventions')
      .insertMany([
        row(ids.answered, { status: 'approved', createdAt: then, updatedAt: then }),
        row(ids.pending, { status: 'pending', createdAt: then, updatedAt: then }),
      ] as never[]);
    await db.collection('webhook_deliveries').insertMany([
      row(ids.oldDelivery, { status: 'delivered', createdAt: then, updatedAt: then, finishedAt: then }),
      row(ids.newDelivery, {
        status: 'delivered',
        createdAt: new Date(),
        updatedAt: new Date(),
        finishedAt: new Date(),
      }),
    ] as never[]);

    // A member may not set retention; an admin sets short windows and applies them.
    const member = await buildWorkspace(app, { roles: ['member'] });
    expect((await app.patch('/v1/workspace/retention', member.key, { jobs: 1 })).status).toBe(403);
    expect((await app.patch('/v1/workspace/retention', ws.key, { usage_rows: 60 })).status).toBe(400);
    const set = await app.patch('/v1/workspace/retention', ws.key, {
      jobs: 2 * 86_400,
      traces: 2 * 86_400,
      interventions: 2 * 86_400,
      webhook_deliveries: 2 * 86_400,
      usage_rows: 4 * 86_400,
    });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ own: { jobs: 172_800, traces: 172_800, usage_rows: 345_600 } });
    const ran = await app.post('/v1/workspace/retention/run', ws.key);
    expect(ran.status, ran.text).toBe(200);
    expect((ran.body as { deleted: Record<string, number> }).deleted).toMatchObject({ jobs: 1, traces: 1 });

    // Gone from every route ...
    expect((await app.get(`/v1/jobs/${old.jobId}`, ws.key)).status).toBe(404);
    expect((await app.get(`/v1/traces/${old.traceId}`, ws.key)).status).toBe(404);
    const jobs = (await app.get('/v1/jobs?limit=100', ws.key)).body as { jobs: { job_id: string }[] };
    expect(jobs.jobs.map((j) => j.job_id)).toEqual([recent.jobId]);
    // ... from the store and Redis ...
    expect(await db.collection('jobs').countDocuments({ _id: old.jobId } as never)).toBe(0);
    expect(await db.collection('run_steps').countDocuments({ jobId: old.jobId })).toBe(0);
    expect(
      await db
        .collection('engrams')
        .countDocuments({ workspaceId: ws.workspaceId, traceId: { $in: [old.traceId, oldTrace!._id] } }),
    ).toBe(0);
    expect(
      await db.collection('engram_places').countDocuments({ _id: { $regex: `^${String(oldTrace!._id)}:` } } as never),
    ).toBe(0);
    expect(await db.collection('usage_ledger').countDocuments({ workspaceId: ws.workspaceId, jobId: old.jobId })).toBe(
      0,
    );
    expect(await app.deps.redis.exists(app.deps.streams.keys.job(old.jobId))).toBe(0);
    // ... the recent run untouched ...
    expect((await app.get(`/v1/jobs/${recent.jobId}`, ws.key)).status).toBe(200);
    const msgs = await app.get(`/v1/traces/${recent.traceId}/messages`, ws.key);
    expect(msgs.status).toBe(200);
    expect(
      await db.collection('usage_ledger').countDocuments({ workspaceId: ws.workspaceId, jobId: recent.jobId }),
    ).toBeGreaterThan(0);
    const left = async (c: string, id: string) => db.collection(c).countDocuments({ _id: id } as never);
    expect([await left('interventions', ids.answered), await left('interventions', ids.pending)]).toEqual([0, 1]);
    expect([
      await left('webhook_deliveries', ids.oldDelivery),
      await left('webhook_deliveries', ids.newDelivery),
    ]).toEqual([0, 1]);
    // ... and the usage totals are what they were.
    expect(await usage()).toEqual(before);
    // The reconciler keeps the rollups of the rows retention removed: an ordinary run, then a full
    // rebuild (as after a Redis that lost its counters), leave every total as it was.
    const ordinary = await app.services.usageReconciler.workspace(ws.workspaceId);
    expect(ordinary.fullRebuilds).toBe(0);
    expect(await usage()).toEqual(before);
    const rebuilt = await app.services.usageReconciler.workspace(ws.workspaceId, new Date(), { full: true });
    expect(rebuilt.fullRebuilds).toBe(1);
    expect(await usage()).toEqual(before);
    // The month's and all-time spend counters rebuilt after Redis lost them still count the rows
    // retention removed (from the hour rollups retention keeps).
    await loseCountersAndRebuild();
    expect(await spend()).toEqual(spentBefore);

    // The sweep's schedule is created once (at every worker start: idempotent).
    await app.services.tenancy.ensureSchedule();
    await app.services.tenancy.ensureSchedule();
    const sched = await app.deps.temporal.client.schedule.getHandle('retention-sweep').describe();
    expect(sched.action).toMatchObject({ type: 'startWorkflow', workflowType: 'retentionSweep' });
    await app.deps.temporal.client.schedule.getHandle('retention-sweep').delete();

    // Storage is reported to admins only.
    const storage = await app.get('/v1/workspace/storage', ws.key);
    expect(storage.status).toBe(200);
    expect(storage.body).toMatchObject({ workspace_id: ws.workspaceId });
    expect((storage.body as { rows: number }).rows).toBeGreaterThan(0);
    expect((await app.get('/v1/workspace/storage', member.key)).status).toBe(403);
  });
});
