import { describe, expect, it } from 'vitest';
import type { UsageRowDoc } from '../../src/db/usage.js';
import { ReceptorUsageRanking, UsageStats } from '../../src/schemas/usage.js';
import { buildWorkspace } from '../support/app.js';
import { useSimPlatform } from '../support/platform.js';
import { settleJob } from '../support/jobs.js';

/**
 * The usage ledger against the provider simulator: one row per billed call (a retried turn's
 * broken attempt included), and every figure of the usage routes, the job result and the trace
 * cost summed from those same rows.
 */
const { app, sim } = useSimPlatform({ tokens: 10, interTokenMs: 3 });

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function run(ws: Ws, neuronId: string, message: string) {
  const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message });
  expect(inv.status).toBe(202);
  const jobId = String(inv.body.job_id);
  const job = await settleJob(app, ws.key, jobId);
  expect(job.status, String(job.failedReason)).toBe('completed');
  return { jobId, traceId: String(inv.body.trace_id), job };
}

const ledger = (workspaceId: string) => app.deps.db.collection<UsageRowDoc>('usage_ledger').find({ workspaceId }).toArray();
const sum = (rows: UsageRowDoc[], f: (r: UsageRowDoc) => number) => rows.reduce((a, r) => a + f(r), 0);

describe('usage ledger and routes', () => {
  it('rows per billed call (a dropped attempt and a tool round trip included) add up on every route, per provider, model and neuron', async () => {
    const ws = await buildWorkspace(app);
    const mk = async (name: string, model: string, tools?: string[]) => String((await app.post('/v1/neurons', ws.key, { name, brain_id: ws.brainId, neuron_config: { model, ...(tools ? { tools } : {}) } })).body.id);
    const priced = await mk('priced', 'openai/gpt-4o-mini', ['calculator']);
    const unpriced = await mk('unpriced', 'openai/sim-unknown');

    sim.configure({ faults: ['disconnect'] });
    const retried = await run(ws, priced, 'one');
    sim.configure({ toolCalls: (b) => (JSON.stringify(b.messages).includes('use the tool') && !b.messages.some((m) => m.role === 'tool') ? [{ name: 'calculator', arguments: { expression: '6*7' } }] : null) });
    const tooled = await run(ws, priced, 'use the tool');
    sim.configure({ toolCalls: undefined });
    const other = await run(ws, unpriced, 'three');

    const rows = await ledger(ws.workspaceId);
    // One row per provider call: 2 attempts + 2 turns + 1 turn.
    expect(rows).toHaveLength(5);
    const broken = rows.filter((r) => r.outcome === 'failed');
    expect(broken).toHaveLength(1);
    expect(broken[0]).toMatchObject({ jobId: retried.jobId, estimated: true });
    expect(broken[0].outputTokens).toBeGreaterThan(0);
    // Reported counts are the provider's: the simulator reports ceil(chars of messages / 4) input tokens.
    for (const r of rows.filter((x) => x.outcome === 'ok')) expect(r.estimated).toBe(false);
    expect(rows.filter((r) => r.model === 'sim-unknown').every((r) => !r.priced && r.costNanos === 0)).toBe(true);
    expect(rows.filter((r) => r.model === 'gpt-4o-mini').every((r) => r.priced && r.costNanos > 0)).toBe(true);

    const totalTokens = sum(rows, (r) => r.totalTokens);
    const totalCost = sum(rows, (r) => r.costNanos) / 1e9;
    const stats = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}`, ws.key)).body);
    expect(stats.totalTokens).toBe(totalTokens);
    expect(stats.totalCost).toBeCloseTo(totalCost, 12);
    expect(stats.calls).toBe(5);
    expect(stats.usageRollupIntegrity.allFacetsMatchTotals).toBe(true);
    expect(stats.usageByProvider.openai.tokens).toBe(totalTokens);
    expect(stats.usageByModel['sim-unknown']).toMatchObject({ priced: false, cost: 0 });
    expect(stats.usageByModel['gpt-4o-mini'].priced).toBe(true);
    expect(stats.usageByModel['gpt-4o-mini'].tokens + stats.usageByModel['sim-unknown'].tokens).toBe(totalTokens);
    const n = stats.usageByResource.neuron[priced];
    expect(n).toMatchObject({ resourceId: priced, slug: 'priced', invokeCount: 2 });
    expect(n.tokens).toBe(sum(rows.filter((r) => r.neuronId === priced), (r) => r.totalTokens));
    expect(stats.usageByResource.neuron[unpriced].invokeCount).toBe(1);
    expect(stats.usageRollupIntegrity.receptor).toMatchObject({ tokens: 0, unattributedTokens: totalTokens, matchesTotals: true });

    // The job result and the trace cost are the same ledger rows.
    for (const r of [retried, tooled, other]) {
      const jobRows = rows.filter((x) => x.jobId === r.jobId);
      const result = r.job.result as { usage: { totalTokens: number; costUsd: number } };
      expect(result.usage.totalTokens).toBe(sum(jobRows, (x) => x.totalTokens));
      expect(result.usage.costUsd).toBeCloseTo(sum(jobRows, (x) => x.costNanos) / 1e9, 12);
      const { trace } = (await app.get<{ trace: { cost_summary: { total_tokens: number; total_cost_usd: number } } }>(`/v1/traces/${r.traceId}`, ws.key)).body;
      expect(trace.cost_summary.total_tokens).toBe(sum(jobRows, (x) => x.totalTokens));
      expect(trace.cost_summary.total_cost_usd).toBeCloseTo(sum(jobRows, (x) => x.costNanos) / 1e9, 12);
    }

    // The caller's own usage (this API key made every call) is the same; a future window is zero.
    const mine = UsageStats.parse((await app.get('/v1/usage', ws.key)).body);
    expect(mine.totalTokens).toBe(totalTokens);
    const future = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}?startDate=2999-01-01&endDate=2999-12-31`, ws.key)).body);
    expect(future).toMatchObject({ totalTokens: 0, totalCost: 0, calls: 0, usageByProvider: {} });
    expect(future.usageRollupIntegrity.allFacetsMatchTotals).toBe(true);
    void sim;
  });

  it('the workspace reads are admin only; another workspace is a 404; bad windows and filters are 400s', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const member = await ws.jwt([]);
    expect((await app.get(`/v1/usage/${ws.workspaceId}`, member)).status).toBe(403);
    expect((await app.get(`/v1/usage/${ws.workspaceId}/receptors`, member)).status).toBe(403);
    expect((await app.get('/v1/usage', member)).status).toBe(200);
    expect((await app.get(`/v1/usage/${other.workspaceId}`, ws.key)).status).toBe(404);
    expect((await app.get(`/v1/usage/${other.workspaceId}/receptors`, ws.key)).status).toBe(404);
    expect((await app.get('/v1/usage')).status).toBe(401);
    for (const q of ['startDate=yesterday', 'endDate=2026-13-45', 'receptorId=nope', 'startDate=2026-02-01&endDate=2026-01-01']) {
      const r = await app.get(`/v1/usage?${q}`, ws.key);
      expect(r.status, q).toBe(400);
      expect(r.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    expect((await app.get(`/v1/usage/${ws.workspaceId}/receptors?sortBy=size`, ws.key)).status).toBe(400);
    expect((await app.get('/v1/usage/not-a-uuid', ws.key)).status).toBe(400);
    const ranking = ReceptorUsageRanking.parse((await app.get(`/v1/usage/${ws.workspaceId}/receptors?sortBy=cost`, ws.key)).body);
    expect(ranking).toMatchObject({ workspaceId: ws.workspaceId, sortBy: 'cost', receptors: [] });
  });
});
