import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { UsageRowDoc } from '../../src/usage/index.js';
import { HOUR_MS } from '../../src/usage/index.js';
import { createUsageCounters } from '../../src/usage/index.js';
import { deleteKeys, scanKeys } from '../../src/kernel/redis.js';
import { Budget } from '../../src/usage/index.js';
import { UsageStats } from '../../src/usage/index.js';
import { systemScope, type Scope } from '../../src/kernel/scope.js';
import type { BilledCall } from '../../src/usage/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The ledger is the truth (docs/usage.md, "When the counters are behind"): rows written only into
 * the ledger (before the counters existed, or around them), several workspaces, several days and
 * the open hour; then a Redis that lost everything. Before and after the reconciler, every usage
 * route, every budget and a share link's used tokens equal the sums of the ledger rows, and a
 * budget created below what its period has spent stops the next run at once.
 */
const { app } = useSimPlatform({ tokens: 8, interTokenMs: 2 });
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const isBuilt = (ws: string) => createUsageCounters(app.deps.redis, app.config.REDIS_PREFIX).isBuilt(ws);
const ledger = () => app.deps.db.collection<UsageRowDoc>('usage_ledger');
const rowsOf = (workspaceId: string) => ledger().find({ workspaceId }).toArray();
const sum = (rows: UsageRowDoc[], f: (r: UsageRowDoc) => number) => rows.reduce((a, r) => a + f(r), 0);

interface Ids {
  users: string[];
  neuron: string;
  receptor: string;
  share: string;
  pathway: string;
}

/**
 * Ledger rows as the platform stores them but written around the counters (straight into the
 * collection): runs of 1–3 calls, in hours from the open one back to `days` days ago; with
 * `decided`, the first row of each run carries `firstOf` (what a writer that died after its row
 * leaves), without it no row does (rows from before the counters existed).
 */
function historyRows(ws: Ws, ids: Ids, n: number, days: number, decided: boolean): UsageRowDoc[] {
  const now = Date.now();
  const rows: UsageRowDoc[] = [];
  for (let j = 0; j < n; j++) {
    // Run j: the open hour for every fifth run, else some hour of the last `days` days (minutes 5–15).
    const hoursBack = j % 5 === 0 ? 0 : 1 + ((j * 7) % (days * 24));
    const base =
      hoursBack === 0 ? now - 90_000 : Math.floor((now - hoursBack * HOUR_MS) / HOUR_MS) * HOUR_MS + 5 * 60_000;
    const runId = randomUUID();
    const viaReceptor = j % 3 === 0;
    const viaPathway = j % 4 === 1;
    const userId = ids.users[j % ids.users.length] ?? null;
    for (let t = 0; t < 1 + (j % 3); t++) {
      const call: BilledCall = {
        key: `${runId}:chat:${t}:1`,
        workspaceId: ws.workspaceId,
        kind: 'chat',
        modelId: j % 2 ? 'openai/gpt-4o-mini' : 'openai/gpt-4.1',
        usage: { inputTokens: 40 + ((j * 13 + t) % 300), outputTokens: 5 + ((j + t) % 60), totalTokens: 0 },
        at: new Date(base + t * 1000),
        placed: false,
        attribution: {
          brainId: ws.brainId,
          userId,
          apiKeyId: userId ? null : ws.apiKeyId,
          jobId: runId,
          runId,
          traceId: null,
          receptorId: viaReceptor ? ids.receptor : null,
          neuronId: ids.neuron,
          pathwayId: viaPathway ? ids.pathway : null,
          shareTokenId: viaReceptor && j % 2 === 0 ? ids.share : null,
        },
      };
      const row = app.services.usage.rowOf(call);
      if (decided && t === 0)
        row.firstOf = [
          'neuron',
          ...(viaReceptor ? (['receptor'] as const) : []),
          ...(viaPathway ? (['pathway'] as const) : []),
        ];
      rows.push(row);
    }
  }
  return rows;
}

async function seed(days: number, decided: boolean, n = 120) {
  const ws = await buildWorkspace(app);
  const ids: Ids = {
    users: [randomUUID(), randomUUID()],
    neuron: randomUUID(),
    receptor: randomUUID(),
    share: randomUUID(),
    pathway: randomUUID(),
  };
  await ledger().insertMany(historyRows(ws, ids, n, days, decided));
  return { ws, ids };
}

const asUser = (ws: Ws, userId: string): Scope => ({ ...systemScope(ws.workspaceId), userId, credential: 'jwt' });

/** Every usage view, budget and share figure of the workspace against the ledger's own sums. */
async function equalsLedger(ws: Ws, ids: Ids, budgets: string[]) {
  const rows = await rowsOf(ws.workspaceId);
  const admin = systemScope(ws.workspaceId);
  const today = new Date().toISOString().slice(0, 10);
  // The route itself, with no window: every row, every run counted once per resource.
  const all = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}`, ws.key)).body);
  expect(all.calls).toBe(rows.length);
  expect(all.totalTokens).toBe(sum(rows, (r) => r.totalTokens));
  expect(all.usageByResource.neuron[ids.neuron].invokeCount).toBe(new Set(rows.map((r) => r.jobId)).size);
  expect(all.usageByResource.receptor[ids.receptor].invokeCount).toBe(
    new Set(rows.filter((r) => r.receptorId).map((r) => r.runId)).size,
  );
  expect(all.usageByResource.pathway[ids.pathway].invokeCount).toBe(
    new Set(rows.filter((r) => r.pathwayId).map((r) => r.runId)).size,
  );
  const views: [Scope, { startDate?: string; endDate?: string }, boolean][] = [
    [admin, {}, false],
    [admin, { startDate: today, endDate: today }, false],
    [asUser(ws, ids.users[0]), {}, true],
  ];
  for (const [scope, w, caller] of views)
    expect(await app.services.usage.stats(scope, w, caller), JSON.stringify(w)).toEqual(
      await app.services.usage.statsFromLedger(scope, w, caller),
    );
  expect(await app.services.usage.receptorRanking(admin, {}, 'invokeCount')).toEqual(
    await app.services.usage.receptorRankingFromLedger(admin, {}, 'invokeCount'),
  );
  for (const id of budgets) {
    const b = Budget.parse((await app.get(`/v1/budgets/${id}`, ws.key)).body);
    const doc = await app.services.budgets.get(admin, id);
    const raw = await app.services.budgets.spentFromLedger(doc);
    expect(b.spent, `${b.scope} ${b.period} ${b.measure}`).toBe(b.measure === 'usd' ? raw / 1e9 : raw);
  }
  const share = await app.services.budgets.shareTokens(ws.workspaceId, ids.share);
  expect(share.used).toBe(
    sum(
      rows.filter((r) => r.shareTokenId === ids.share),
      (r) => r.totalTokens,
    ),
  );
}

async function budgetsOf(ws: Ws, ids: Ids): Promise<string[]> {
  const out: string[] = [];
  for (const body of [
    { scope: 'workspace', measure: 'tokens', period: 'month', limit: 1e9 },
    { scope: 'workspace', measure: 'usd', period: 'total', limit: 1e6 },
    { scope: 'workspace', measure: 'tokens', period: 'day', limit: 1e9 },
    { scope: 'receptor', target_id: ids.receptor, measure: 'tokens', period: 'total', limit: 1e9 },
  ]) {
    // Budgets of targets that exist only in the ledger are written as the service stores them.
    if (body.scope === 'receptor') {
      const doc = {
        _id: randomUUID(),
        workspaceId: ws.workspaceId,
        key: `${ws.workspaceId}:receptor:${ids.receptor}:tokens:total`,
        scope: 'receptor' as const,
        targetId: ids.receptor,
        measure: 'tokens' as const,
        period: 'total' as const,
        limit: 1e9,
        policy: 'fail' as const,
        name: null,
        createdBy: null,
        createdAt: new Date(),
        updatedAt: new Date(),
      };
      await app.deps.db.collection<typeof doc>('budgets').insertOne(doc);
      out.push(doc._id);
      continue;
    }
    const r = await app.post('/v1/budgets', ws.key, body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    out.push(String(r.body.id));
  }
  await app.services.budgets.setShareTokens(ws.workspaceId, ids.share, 1e9, null);
  return out;
}

/** Everything this platform keeps in Redis (its key prefix): what a Redis that lost its data shows it. */
async function flushRedis() {
  for await (const keys of scanKeys(app.deps.redis, `${app.config.REDIS_PREFIX}*`))
    await deleteKeys(app.deps.redis, keys);
}

describe('the ledger is the truth', () => {
  it('rows written only into the ledger: every figure equals it before and after the reconciler; then Redis loses everything', async () => {
    // A: rows from before the counters (no firstOf), five days; B: rows a dead writer left (firstOf decided), three days.
    const a = await seed(5, false);
    const b = await seed(3, true);
    // C: a workspace already rebuilt, then rows written around its counters (six hours, and four days back).
    const c = await seed(1, true, 10);
    expect((await app.services.usageReconciler.workspace(c.ws.workspaceId)).fullRebuilds).toBe(1);
    const cRows = historyRows(c.ws, c.ids, 80, 4, true);
    await ledger().insertMany(cRows);
    const all = [a, b, c];
    const budgets = new Map<string, string[]>();
    for (const s of all) budgets.set(s.ws.workspaceId, await budgetsOf(s.ws, s.ids));

    // Before any reconcile: A and B are not built, so every figure is the ledger's.
    for (const s of [a, b]) await equalsLedger(s.ws, s.ids, budgets.get(s.ws.workspaceId)!);

    // The reconciler (as its schedule runs it): full rebuilds for A and B, C found behind and rebuilt.
    const report = await app.services.usageReconciler.all();
    expect(report.fullRebuilds).toBeGreaterThanOrEqual(3);
    for (const s of all) {
      expect(await isBuilt(s.ws.workspaceId)).toBe(true);
      await equalsLedger(s.ws, s.ids, budgets.get(s.ws.workspaceId)!);
    }
    // A second run finds nothing to do.
    const again = await app.services.usageReconciler.workspace(a.ws.workspaceId);
    expect(again).toMatchObject({ fullRebuilds: 0, rowsRecounted: 0, hoursCorrected: 0, invocationsDecided: 0 });

    // Redis loses everything: the figures are still the ledger's (read from it), and after the reconciler too.
    await flushRedis();
    for (const s of all) {
      expect(await isBuilt(s.ws.workspaceId)).toBe(false);
      await equalsLedger(s.ws, s.ids, budgets.get(s.ws.workspaceId)!);
    }
    for (const s of all) await app.services.usageReconciler.workspace(s.ws.workspaceId);
    for (const s of all) {
      expect(await isBuilt(s.ws.workspaceId)).toBe(true);
      await equalsLedger(s.ws, s.ids, budgets.get(s.ws.workspaceId)!);
    }
  }, 900_000);

  it('a monthly budget created below what the month has already spent stops the next run at once', async () => {
    const { ws, ids } = await seed(2, false, 30);
    const month = await rowsOf(ws.workspaceId);
    const thisMonth = month.filter((r) => r.at.toISOString().slice(0, 7) === new Date().toISOString().slice(0, 7));
    const spent = sum(thisMonth, (r) => r.totalTokens);
    expect(spent).toBeGreaterThan(0);
    for (const built of [false, true]) {
      if (built) await app.services.usageReconciler.workspace(ws.workspaceId);
      const created = await app.post('/v1/budgets', ws.key, {
        scope: 'workspace',
        measure: 'tokens',
        period: 'month',
        limit: Math.max(1, spent - 10),
        policy: 'fail',
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const b = Budget.parse(created.body);
      expect(b.spent).toBe(spent);
      expect(b.exceeded).toBe(true);
      const n = await app.post('/v1/neurons', ws.key, {
        name: `n-${randomUUID().slice(0, 6)}`,
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/gpt-4o-mini' },
      });
      const r = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'hello' });
      expect(r.status).toBe(202);
      const job = await settleJob(app, ws.key, String(r.body.job_id));
      expect(job.status).toBe('failed');
      expect(job.failedReason).toMatch(/^BUDGET_EXCEEDED: /);
      expect((await app.del(`/v1/budgets/${b.id}`, ws.key)).status).toBe(200);
    }
    void ids;
  }, 300_000);
});
