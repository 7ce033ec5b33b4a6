import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BudgetDoc } from '../../src/usage/index.js';
import { HOUR_MS, type UsageCumulativeDoc, type UsageRollupDoc, type UsageRowDoc } from '../../src/usage/index.js';
import { deleteKeys, scanKeys } from '../../src/kernel/redis.js';
import { systemScope, type Scope } from '../../src/kernel/scope.js';
import type { BilledCall } from '../../src/usage/index.js';
import { UsageStats } from '../../src/usage/index.js';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';

/**
 * The usage counters and rollups (docs/usage.md, "Counters and rollups") against the ledger they
 * summarise: after concurrent and retried writes, a reconciler run, a Redis that lost its
 * counters and a row written after its hour was stored, every figure the routes and budgets
 * answer equals the same figure summed by the store over the ledger rows (the old aggregation,
 * kept as the reference).
 */
const { app } = usePlatform();

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
const MODELS = ['openai/gpt-4o-mini', 'openai/gpt-4.1', 'openai/sim-unknown'];
const pick = <T>(xs: T[], i: number) => xs[i % xs.length];

/**
 * A ledger shaped like a small team's: jobs of 1–4 billed calls, by two users and an API key,
 * for two neurons (one through a receptor and a share link), pathway runs of two jobs (a classify
 * job and a neuron node), in hours from the open one back to two and a half days ago. Every job's
 * calls fall in minutes 5–15 of its hour (the open hour: the last minute), so a window edge at
 * minute 30 cuts no run.
 */
function ledgerCalls(
  ws: Ws,
  ids: { users: string[]; neurons: string[]; receptor: string; pathway: string; share: string },
  now: number,
): BilledCall[] {
  const calls: BilledCall[] = [];
  const offsets = [0, 1, 2, 5, 30, 60];
  for (let j = 0; j < 48; j++) {
    const off = pick(offsets, j);
    const base = off === 0 ? now - 60_000 : Math.floor((now - off * HOUR_MS) / HOUR_MS) * HOUR_MS + 5 * 60_000;
    const viaPathway = j % 4 === 3;
    const runId = randomUUID();
    const jobs = viaPathway ? [runId, randomUUID()] : [runId];
    const userId = pick([...ids.users, null], j);
    const viaReceptor = j % 3 === 0;
    jobs.forEach((jobId, k) => {
      const turns = 1 + ((j + k) % 4);
      for (let t = 0; t < turns; t++) {
        const input = 50 + ((j * 31 + t * 7) % 400);
        calls.push({
          key: `${jobId}:chat:${t}:1`,
          workspaceId: ws.workspaceId,
          kind: 'chat',
          modelId: pick(MODELS, j + t),
          usage: {
            inputTokens: input,
            outputTokens: 10 + ((j + t) % 90),
            totalTokens: 0,
            cachedInputTokens: t === 1 ? 16 : 0,
          },
          at: new Date(base + (k * 4 + t) * 1000),
          placed: false,
          attribution: {
            brainId: ws.brainId,
            userId,
            apiKeyId: userId ? null : ws.apiKeyId,
            jobId,
            runId,
            traceId: null,
            receptorId: viaReceptor ? ids.receptor : null,
            neuronId: viaPathway && k === 0 ? null : pick(ids.neurons, j),
            pathwayId: viaPathway ? ids.pathway : null,
            shareTokenId: viaReceptor && j % 2 === 0 ? ids.share : null,
          },
        });
      }
    });
  }
  return calls;
}

const asUser = (ws: Ws, userId: string): Scope => ({ ...systemScope(ws.workspaceId), userId, credential: 'jwt' });
const asKey = (ws: Ws): Scope => ({ ...systemScope(ws.workspaceId), apiKeyId: ws.apiKeyId, credential: 'api_key' });

/** Every view the routes offer, answered from counters and rollups and from the ledger: equal, or the first difference. */
async function compareAll(ws: Ws, ids: { users: string[]; receptor: string }, now: number, every = true) {
  const admin = systemScope(ws.workspaceId);
  const edgeStart = new Date(Math.floor((now - 30 * HOUR_MS) / HOUR_MS) * HOUR_MS + 30 * 60_000).toISOString();
  const edgeEnd = new Date(Math.floor((now - 2 * HOUR_MS) / HOUR_MS) * HOUR_MS + 30 * 60_000).toISOString();
  const today = new Date(now).toISOString().slice(0, 10);
  const views: [Scope, { startDate?: string; endDate?: string; receptorId?: string }, boolean][] = [
    [admin, {}, false],
    [admin, { startDate: edgeStart, endDate: edgeEnd }, false],
    // From before the reconciler's first day: the cumulative chain's base and the hours before it.
    [admin, { startDate: new Date(now - 10 * 24 * HOUR_MS).toISOString().slice(0, 10) }, false],
    [admin, { startDate: today, endDate: today }, false],
    [asUser(ws, ids.users[0]), { endDate: edgeEnd }, true],
    [asKey(ws), { receptorId: ids.receptor }, true],
  ];
  for (const [scope, w, caller] of every ? views : views.slice(0, 3)) {
    const [fast, slow] = await Promise.all([
      app.services.usage.stats(scope, w, caller),
      app.services.usage.statsFromLedger(scope, w, caller),
    ]);
    expect(fast, JSON.stringify({ w, caller, user: scope.userId })).toEqual(slow);
    expect(fast.usageRollupIntegrity.allFacetsMatchTotals).toBe(true);
  }
  for (const sortBy of every ? (['tokens', 'cost', 'invokeCount'] as const) : []) {
    expect(await app.services.usage.receptorRanking(admin, {}, sortBy)).toEqual(
      await app.services.usage.receptorRankingFromLedger(admin, {}, sortBy),
    );
  }
}

async function budgetsMatch(budgets: BudgetDoc[]) {
  for (const b of budgets) {
    const view = await app.services.budgets.view(b);
    const raw = await app.services.budgets.spentFromLedger(b);
    expect(view.spent, `${b.scope} ${b.period} ${b.measure}`).toBe(b.measure === 'usd' ? raw / 1e9 : raw);
  }
}

/** Deletes every usage counter of the workspace (a Redis that lost them). */
async function loseCounters(workspaceId: string) {
  for await (const keys of scanKeys(app.deps.redis, `${app.config.REDIS_PREFIX}usage:{${workspaceId}}:*`))
    await deleteKeys(app.deps.redis, keys);
}

describe('usage counters and rollups', () => {
  it('equal the ledger after concurrent and retried writes, a reconciler run, lost counters and a late row', async () => {
    const ws = await buildWorkspace(app);
    const now = Date.now();
    const ids = {
      users: [randomUUID(), randomUUID()],
      neurons: [randomUUID(), randomUUID()],
      receptor: randomUUID(),
      pathway: randomUUID(),
      share: randomUUID(),
    };
    const calls = ledgerCalls(ws, ids, now);
    // Concurrent writers, and every third call written twice at once (a retried write: the same key, later).
    const writes = calls.flatMap((c, i) => (i % 3 === 0 ? [c, { ...c, at: new Date(c.at!.getTime() + 500) }] : [c]));
    for (let i = 0; i < writes.length; i += 25)
      await Promise.all(writes.slice(i, i + 25).map((c) => app.services.usage.record(c)));
    // …and every fifth one again afterwards.
    await Promise.all(
      calls.filter((_, i) => i % 5 === 0).map((c) => app.services.usage.record({ ...c, at: new Date() })),
    );
    const rows = await app.deps.db
      .collection<UsageRowDoc>('usage_ledger')
      .find({ workspaceId: ws.workspaceId })
      .toArray();
    expect(rows).toHaveLength(calls.length);

    const stats = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}`, ws.key)).body);
    expect(stats.calls).toBe(calls.length);
    expect(stats.totalTokens).toBe(rows.reduce((a, r) => a + r.totalTokens, 0));
    // A neuron's invocations are its jobs; the pathway's are its runs (two jobs each).
    expect(stats.usageByResource.pathway[ids.pathway].invokeCount).toBe(
      new Set(rows.filter((r) => r.pathwayId === ids.pathway).map((r) => r.runId)).size,
    );
    expect(stats.usageByResource.neuron[ids.neurons[0]].invokeCount).toBe(
      new Set(rows.filter((r) => r.neuronId === ids.neurons[0]).map((r) => r.jobId)).size,
    );
    await compareAll(ws, ids, now);

    const mk = (
      scope: BudgetDoc['scope'],
      targetId: string | null,
      measure: BudgetDoc['measure'],
      period: BudgetDoc['period'],
    ): BudgetDoc => ({
      _id: randomUUID(),
      workspaceId: ws.workspaceId,
      key: `${ws.workspaceId}:${scope}:${targetId}:${measure}:${period}`,
      scope,
      targetId,
      measure,
      period,
      limit: 1e9,
      policy: 'fail',
      name: null,
      createdBy: null,
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const budgets = [
      mk('workspace', null, 'tokens', 'total'),
      mk('workspace', null, 'usd', 'month'),
      mk('neuron', ids.neurons[0], 'usd', 'day'),
      mk('receptor', ids.receptor, 'tokens', 'month'),
      mk('share_token', ids.share, 'tokens', 'total'),
    ];
    await app.deps.db.collection<BudgetDoc>('budgets').insertMany(budgets);
    await budgetsMatch(budgets);

    // The reconciler finds nothing to correct and stores the closed hours as rollups.
    const first = await app.services.usageReconciler.workspace(ws.workspaceId);
    expect(first).toMatchObject({
      rowsRecounted: 0,
      hoursCorrected: 0,
      cumulativeCorrected: 0,
      hourCounterDrift: 0,
      budgetCountersCorrected: 0,
      spendCountersCorrected: 0,
      fullRebuilds: 1,
    });
    // …and, for every closed day whose hours it covered (the ledger reaches 60 hours back),
    // everything billed through that day, after a base: everything before the first such day.
    const DAY = 24 * HOUR_MS;
    const yesterday = Math.floor(now / DAY) - 1;
    const closedHour = Math.floor((Date.now() - 5 * 60_000) / HOUR_MS);
    const cumulative = (
      await app.deps.db
        .collection<UsageCumulativeDoc>('usage_cumulative')
        .find({ workspaceId: ws.workspaceId })
        .toArray()
    ).sort((x, y) => x.day.getTime() - y.day.getTime());
    expect(first.cumulativeStored).toBe(cumulative.length);
    const dayStored = (yesterday + 1) * 24 <= closedHour; // not in the first five minutes of a UTC day
    if (dayStored) expect(cumulative.map((x) => x.day.getTime())).toContain(yesterday * DAY);
    expect(cumulative[0]!.chainFrom).toBe(cumulative[0]!.day.getTime() / DAY + 1); // the base
    for (const c of cumulative) expect(c.rows).toBe(rows.filter((r) => r.at.getTime() < c.day.getTime() + DAY).length);
    // A day's own figures are the difference of two neighbours.
    for (let i = 1; i < cumulative.length; i++) {
      const d = cumulative[i]!.day.getTime();
      expect(cumulative[i]!.rows - cumulative[i - 1]!.rows).toBe(
        rows.filter((r) => r.at.getTime() >= d && r.at.getTime() < d + DAY).length,
      );
    }
    const closedHours = new Set(
      rows
        .filter((r) => r.at.getTime() < Math.floor((Date.now() - 5 * 60_000) / HOUR_MS) * HOUR_MS)
        .map((r) => Math.floor(r.at.getTime() / HOUR_MS)),
    );
    expect(first.hoursStored).toBe(closedHours.size);
    const stored = await app.deps.db
      .collection<UsageRollupDoc>('usage_rollups')
      .find({ workspaceId: ws.workspaceId })
      .toArray();
    expect(stored.reduce((a, d) => a + d.rows, 0)).toBe(
      rows.filter((r) => closedHours.has(Math.floor(r.at.getTime() / HOUR_MS))).length,
    );
    await compareAll(ws, ids, now, false);
    expect((await app.services.usageReconciler.workspace(ws.workspaceId)).hoursStored).toBe(0);

    // Redis loses the counters (and their `built` marker): the figures are read from the ledger
    // until the reconciler rebuilds them in full (recent rows replayed, every spend counter made
    // the ledger's sums).
    await loseCounters(ws.workspaceId);
    const meanwhile = await app.services.usage.stats(systemScope(ws.workspaceId), {}, false);
    expect(meanwhile.calls).toBe(calls.length);
    await budgetsMatch(budgets);
    const repaired = await app.services.usageReconciler.workspace(ws.workspaceId);
    expect(repaired.fullRebuilds).toBe(1);
    expect(repaired.rowsRecounted).toBe(
      rows.filter((r) => r.at.getTime() >= Math.floor((Date.now() - 48 * HOUR_MS) / HOUR_MS) * HOUR_MS).length,
    );
    expect(repaired.spendCountersCorrected).toBeGreaterThan(0);
    await compareAll(ws, ids, now);
    await budgetsMatch(budgets);

    // A row written after its hour was stored (late): the reconciler rewrites that hour's rollup.
    const lateHour = Math.floor((now - 5 * HOUR_MS) / HOUR_MS);
    await app.services.usage.record({
      ...calls[3],
      key: `${randomUUID()}:chat:0:1`,
      at: new Date(lateHour * HOUR_MS + 20 * 60_000),
      attribution: { ...calls[3].attribution, jobId: randomUUID(), runId: null },
    });
    const behind = await app.services.usage.stats(systemScope(ws.workspaceId), {}, false);
    expect(behind.calls).toBe(calls.length); // the stored rollup of that hour wins over its counters
    // …and one in a day already in a cumulative rollup: the reconciler rewrites its hour and that rollup.
    const dayLateHour = yesterday * 24 + 12;
    if (dayStored)
      await app.services.usage.record({
        ...calls[4],
        key: `${randomUUID()}:chat:0:1`,
        at: new Date(dayLateHour * HOUR_MS + 20 * 60_000),
        attribution: { ...calls[4].attribution, jobId: randomUUID(), runId: null },
      });
    const late = await app.services.usageReconciler.workspace(ws.workspaceId);
    // (An hour that had no rows before has no stored rollup: it is stored now rather than corrected.)
    expect(late).toMatchObject({
      cumulativeCorrected: dayStored ? 1 : 0,
      rowsRecounted: 0,
    });
    expect(late.hoursCorrected + late.hoursStored).toBe(dayStored ? new Set([lateHour, dayLateHour]).size : 1);
    expect(late.hoursCorrected).toBeGreaterThanOrEqual(1);
    await compareAll(ws, ids, now);
    expect((await app.services.usage.stats(systemScope(ws.workspaceId), {}, false)).calls).toBe(
      calls.length + 1 + (dayStored ? 1 : 0),
    );
  }, 300_000);

  it('the reconciler runs as a Temporal workflow on its schedule, created once', async () => {
    const ws = await buildWorkspace(app);
    await app.services.usage.record({
      key: `${randomUUID()}:chat:0:1`,
      workspaceId: ws.workspaceId,
      kind: 'chat',
      modelId: 'openai/gpt-4o-mini',
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      at: new Date(Date.now() - 3 * HOUR_MS),
      placed: false,
      attribution: {
        brainId: ws.brainId,
        userId: null,
        apiKeyId: ws.apiKeyId,
        jobId: randomUUID(),
        traceId: null,
        receptorId: null,
        neuronId: null,
        pathwayId: null,
      },
    });
    const report = (await app.deps.temporal.client.workflow.execute('usageReconcile', {
      taskQueue: app.config.TEMPORAL_TASK_QUEUE,
      workflowId: `usage-reconcile-test-${randomUUID()}`,
      args: [],
    })) as { workspaces: number; hoursStored: number };
    expect(report.workspaces).toBeGreaterThanOrEqual(1);
    expect(report.hoursStored).toBeGreaterThanOrEqual(1);
    expect(await app.deps.db.collection('usage_rollups').countDocuments({ workspaceId: ws.workspaceId })).toBe(1);
    // The schedule is created idempotently (a second start finds it).
    await app.services.usageReconciler.ensureSchedule();
    await app.services.usageReconciler.ensureSchedule();
    const handle = app.deps.temporal.client.schedule.getHandle('usage-reconcile');
    try {
      const d = await handle.describe();
      // The schedule id is one per Temporal namespace: another test file's platform, sharing this
      // dev server, may have created it first on its own task queue, so the queue is not asserted.
      expect(d.action).toMatchObject({ type: 'startWorkflow', workflowType: 'usageReconcile' });
    } finally {
      await handle.delete();
    }
  });
});
