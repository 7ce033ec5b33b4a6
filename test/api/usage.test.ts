import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { UsageRowDoc } from '../../src/usage/index.js';
import { ReceptorList } from '../../src/receptors/schemas.js';
import { ReceptorUsageRanking, UsageStats } from '../../src/usage/index.js';
import { systemScope } from '../../src/kernel/scope.js';
import { buildWorkspace } from '../support/app.js';
import { useSimPlatform } from '../support/platform.js';
import { settleJob } from '../support/jobs.js';

/**
 * The usage ledger against the provider simulator: one row per billed call (a retried turn's
 * broken attempt included), and every figure of the usage routes, the job result and the trace
 * cost summed from those same rows.
 */
// A remote embedder and speech provider on the same simulator (small batches of small chunks, so an ingest makes several billed calls).
const { app, sim } = useSimPlatform(
  { tokens: 10, interTokenMs: 3 },
  {
    EMBEDDING_MODEL: 'openai/text-embedding-3-small',
    EMBEDDING_DIMENSION: 8,
    EMBED_BATCH_SIZE: 2,
    CHUNK_SIZE_TOKENS: 40,
    CHUNK_OVERLAP_TOKENS: 0,
    // Speech through the same simulator's /v1/audio/transcriptions (whisper-1, billed per minute of audio).
    STT_PROVIDER: 'openai',
  },
);

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function run(ws: Ws, neuronId: string, message: string) {
  const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message });
  expect(inv.status).toBe(202);
  const jobId = String(inv.body.job_id);
  const job = await settleJob(app, ws.key, jobId);
  expect(job.status, String(job.failedReason)).toBe('completed');
  return { jobId, traceId: String(inv.body.trace_id), job };
}

const ledger = (workspaceId: string) =>
  app.deps.db.collection<UsageRowDoc>('usage_ledger').find({ workspaceId }).toArray();
const sum = (rows: UsageRowDoc[], f: (r: UsageRowDoc) => number) => rows.reduce((a, r) => a + f(r), 0);

describe('usage ledger and routes', () => {
  it('rows per billed call (a dropped attempt and a tool round trip included) add up on every route, per provider, model and neuron', async () => {
    const ws = await buildWorkspace(app);
    const mk = async (name: string, model: string, tools?: string[]) =>
      String(
        (
          await app.post('/v1/neurons', ws.key, {
            name,
            brain_id: ws.brainId,
            neuron_config: { model, ...(tools ? { tools } : {}) },
          })
        ).body.id,
      );
    const priced = await mk('priced', 'openai/gpt-4o-mini', ['calculator']);
    const unpriced = await mk('unpriced', 'openai/sim-unknown');

    sim.configure({ faults: ['disconnect'] });
    const retried = await run(ws, priced, 'one');
    sim.configure({
      toolCalls: (b) =>
        JSON.stringify(b.messages).includes('use the tool') && !b.messages.some((m) => m.role === 'tool')
          ? [{ name: 'calculator', arguments: { expression: '6*7' } }]
          : null,
    });
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
    expect(n.tokens).toBe(
      sum(
        rows.filter((r) => r.neuronId === priced),
        (r) => r.totalTokens,
      ),
    );
    expect(stats.usageByResource.neuron[unpriced].invokeCount).toBe(1);
    expect(stats.usageRollupIntegrity.receptor).toMatchObject({
      tokens: 0,
      unattributedTokens: totalTokens,
      matchesTotals: true,
    });
    // Summed from counters, the same figures as summed by the store over the ledger rows.
    expect(await app.services.usage.stats(systemScope(ws.workspaceId), {}, false)).toEqual(
      await app.services.usage.statsFromLedger(systemScope(ws.workspaceId), {}, false),
    );

    // The job result and the trace cost are the same ledger rows.
    for (const r of [retried, tooled, other]) {
      const jobRows = rows.filter((x) => x.jobId === r.jobId);
      const result = r.job.result as { usage: { totalTokens: number; costUsd: number } };
      expect(result.usage.totalTokens).toBe(sum(jobRows, (x) => x.totalTokens));
      expect(result.usage.costUsd).toBeCloseTo(sum(jobRows, (x) => x.costNanos) / 1e9, 12);
      const { trace } = (
        await app.get<{ trace: { cost_summary: { total_tokens: number; total_cost_usd: number } } }>(
          `/v1/traces/${r.traceId}`,
          ws.key,
        )
      ).body;
      expect(trace.cost_summary.total_tokens).toBe(sum(jobRows, (x) => x.totalTokens));
      expect(trace.cost_summary.total_cost_usd).toBeCloseTo(sum(jobRows, (x) => x.costNanos) / 1e9, 12);
    }

    // The caller's own usage (this API key made every call) is the same; a future window is zero.
    const mine = UsageStats.parse((await app.get('/v1/usage', ws.key)).body);
    expect(mine.totalTokens).toBe(totalTokens);
    // Dates alone: endDate includes its whole UTC day.
    const days = rows.map((r) => r.at.toISOString().slice(0, 10)).sort();
    expect(
      UsageStats.parse(
        (await app.get(`/v1/usage/${ws.workspaceId}?startDate=${days[0]}&endDate=${days.at(-1)}`, ws.key)).body,
      ).totalTokens,
    ).toBe(totalTokens);
    const future = UsageStats.parse(
      (await app.get(`/v1/usage/${ws.workspaceId}?startDate=2999-01-01&endDate=2999-12-31`, ws.key)).body,
    );
    expect(future).toMatchObject({ totalTokens: 0, totalCost: 0, calls: 0, usageByProvider: {} });
    expect(future.usageRollupIntegrity.allFacetsMatchTotals).toBe(true);
    void sim;
  });

  it('runs through a receptor and a pathway add up per receptor and pathway too, on every route', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = String(
      (
        await app.post('/v1/neurons', ws.key, {
          name: 'facet',
          brain_id: ws.brainId,
          neuron_config: { model: 'openai/gpt-4o-mini' },
        })
      ).body.id,
    );
    const receptorId = ReceptorList.parse(
      (await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body,
    ).receptors.find((r) => r.executable_target.id === neuronId)!.id;
    const fired = await app.post(`/v1/receptors/${receptorId}/fire`, ws.key, {
      invoke: { message: 'from the receptor' },
    });
    expect(fired.status).toBe(202);
    expect((await settleJob(app, ws.key, String(fired.body.job_id))).status).toBe('completed');
    // A pathway run whose classify call (its own job) and neuron node (a child job) are one invocation.
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'facet-path',
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            {
              id: 'c',
              type: 'classify',
              data: { categories: ['go', 'stop'], model: 'openai/gpt-4o-mini', input: 'shall we?' },
            },
            { id: 'n', type: 'neuron', data: { neuron_id: neuronId, message: 'from the pathway' } },
            { id: 'o', type: 'output' },
            { id: 'x', type: 'output' },
          ],
          edges: [
            { source: 's', target: 'c' },
            { source: 'c', target: 'n', handle: 'go' },
            { source: 'c', target: 'x', handle: 'stop' },
            { source: 'n', target: 'o' },
          ],
        },
      },
      ws.brainHeaders,
    );
    expect(p.status, p.text).toBe(201);
    const pathwayId = String(p.body.id);
    sim.configure({ text: (b) => (String(b.messages[0]?.content ?? '').includes('Classify') ? 'go' : null) });
    const ex = await app.post(`/v1/pathways/${pathwayId}/execute`, ws.key, {}, ws.brainHeaders);
    const pathwayJob = await settleJob(app, ws.key, String(ex.body.job_id));
    sim.configure({ text: undefined });
    expect(pathwayJob.status, pathwayJob.failedReason).toBe('completed');
    await run(ws, neuronId, 'direct');

    const rows = await ledger(ws.workspaceId);
    const tokens = (f: (r: UsageRowDoc) => boolean) => sum(rows.filter(f), (r) => r.totalTokens);
    const nanos = (f: (r: UsageRowDoc) => boolean) => sum(rows.filter(f), (r) => r.costNanos);
    expect(rows.filter((r) => r.receptorId === receptorId)).toHaveLength(1);
    expect(rows.filter((r) => r.pathwayId === pathwayId)).toHaveLength(2);
    expect(new Set(rows.filter((r) => r.pathwayId === pathwayId).map((r) => r.jobId)).size).toBe(2);
    // The pathway job's result counts the whole run: its classify call and its neuron node's child job.
    const pathwayRows = rows.filter((r) => r.pathwayId === pathwayId);
    expect((pathwayJob.result as { usage: { totalTokens: number; costUsd: number } }).usage).toMatchObject({
      totalTokens: sum(pathwayRows, (r) => r.totalTokens),
      costUsd: expect.closeTo(sum(pathwayRows, (r) => r.costNanos) / 1e9, 12),
    });
    expect(rows.filter((r) => r.neuronId === neuronId)).toHaveLength(3);

    const stats = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}`, ws.key)).body);
    expect(stats.totalTokens).toBe(tokens(() => true));
    expect(stats.usageByResource.receptor[receptorId]).toMatchObject({
      tokens: tokens((r) => r.receptorId === receptorId),
      invokeCount: 1,
      subtype: 'neuron',
    });
    expect(stats.usageByResource.receptor[receptorId].cost).toBeCloseTo(
      nanos((r) => r.receptorId === receptorId) / 1e9,
      12,
    );
    expect(stats.usageByResource.pathway[pathwayId]).toMatchObject({
      tokens: tokens((r) => r.pathwayId === pathwayId),
      invokeCount: 1,
      slug: 'facet-path',
    });
    expect(stats.usageByResource.neuron[neuronId]).toMatchObject({
      tokens: tokens((r) => r.neuronId === neuronId),
      invokeCount: 3,
    });
    expect(
      stats.usageByResource.neuron[neuronId].inputTokens + stats.usageByResource.neuron[neuronId].outputTokens,
    ).toBe(stats.usageByResource.neuron[neuronId].tokens);
    const integrity = stats.usageRollupIntegrity;
    expect(integrity).toMatchObject({ totalTokens: stats.totalTokens, allFacetsMatchTotals: true });
    expect(integrity.receptor.tokens + integrity.receptor.unattributedTokens!).toBe(stats.totalTokens);
    expect(integrity.pathway.tokens + integrity.pathway.unattributedTokens!).toBe(stats.totalTokens);
    expect(integrity.model.tokens).toBe(stats.totalTokens);
    expect(await app.services.usage.stats(systemScope(ws.workspaceId), {}, false)).toEqual(
      await app.services.usage.statsFromLedger(systemScope(ws.workspaceId), {}, false),
    );

    // The caller's usage filtered by receptor, and the receptor ranking, are the same rows.
    const mine = UsageStats.parse((await app.get(`/v1/usage?receptorId=${receptorId}`, ws.key)).body);
    expect(mine.totalTokens).toBe(tokens((r) => r.receptorId === receptorId));
    expect(mine.calls).toBe(1);
    for (const sortBy of ['tokens', 'cost', 'invokeCount'] as const) {
      const ranking = ReceptorUsageRanking.parse(
        (await app.get(`/v1/usage/${ws.workspaceId}/receptors?sortBy=${sortBy}`, ws.key)).body,
      );
      expect(ranking.receptors).toEqual([
        {
          receptorId,
          receptorSlug: expect.any(String),
          receptorType: 'neuron',
          tokens: tokens((r) => r.receptorId === receptorId),
          cost: expect.closeTo(nanos((r) => r.receptorId === receptorId) / 1e9, 12),
          invokeCount: 1,
        },
      ]);
    }
    // A window that ends before the runs holds nothing.
    const past = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}?endDate=2000-01-01`, ws.key)).body);
    expect(past).toMatchObject({ totalTokens: 0, calls: 0 });
  });

  it('a remote embedder writes one ledger row per billed batch; a refused call (then retried) writes none', async () => {
    const ws = await buildWorkspace(app);
    const before = sim.embeddingRequests.length;
    sim.failEmbeddings([500]);
    const text = Array.from(
      { length: 12 },
      (_, i) => `Paragraph ${i} talks about copper lanterns, harbor maples and quartz summits at some length.`,
    ).join('\n\n');
    const res = await app.post(
      '/v1/assets/ingest',
      ws.key,
      { source: { type: 'text', value: text }, name: 'ledger notes' },
      ws.brainHeaders,
    );
    expect(res.status, res.text).toBe(201);
    const job = await settleJob(app, ws.key, String(res.body.job_id));
    expect(job.status, job.failedReason).toBe('completed');
    // More chunks than one batch: the version is prepared in one activity, then embedded batch by batch.
    const history = await app.deps.temporal.client.workflow.getHandle(String(res.body.job_id)).fetchHistory();
    const activities = (history.events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    expect(activities[0]).toBe('ingestWhole');
    expect(activities.filter((a) => a === 'ingestEmbed').length).toBeGreaterThan(1);
    expect(activities.at(-1)).toBe('ingestFinish');
    const calls = sim.embeddingRequests.slice(before);
    const billed = calls.slice(1); // the first call was refused with a 500 and retried
    expect(billed.length).toBeGreaterThan(1);
    const rows = (await ledger(ws.workspaceId)).filter((r) => r.kind === 'embedding');
    expect(rows).toHaveLength(billed.length);
    const reported = billed.reduce(
      (n, b) => n + (Array.isArray(b.input) ? b.input : [b.input]).reduce((a, t) => a + Math.ceil(t.length / 4), 0),
      0,
    );
    expect(sum(rows, (r) => r.inputTokens)).toBe(reported);
    for (const r of rows) {
      expect(r).toMatchObject({
        provider: 'openai',
        model: 'text-embedding-3-small',
        outputTokens: 0,
        priced: true,
        jobId: job.job_id,
        outcome: 'ok',
      });
      expect(r.costNanos).toBe(Math.round(r.inputTokens * 20)); // $0.02 per 1M tokens
    }
    const stats = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}`, ws.key)).body);
    expect(stats.usageByModel['text-embedding-3-small']).toMatchObject({ tokens: reported, priced: true });
    expect(stats.totalTokens).toBe(reported);
    expect(stats.usageRollupIntegrity.allFacetsMatchTotals).toBe(true);
    // The cost estimates come from the same price table.
    expect((await app.get('/v1/config/cost-estimates', ws.key)).body).toMatchObject({
      embed_model: 'openai/text-embedding-3-small',
      embed_per_1k_tokens_usd: 0.00002,
      priced: true,
    });
  });

  it('a transcription is a ledger row priced per minute of audio; a refused call (then retried) writes none', async () => {
    const ws = await buildWorkspace(app);
    // Three seconds of 16 kHz mono linear16 silence as a WAV file.
    const pcm = Buffer.alloc(3 * 16_000 * 2);
    const header = Buffer.alloc(44);
    header.write('RIFF', 0);
    header.writeUInt32LE(36 + pcm.length, 4);
    header.write('WAVE', 8);
    header.write('fmt ', 12);
    header.writeUInt32LE(16, 16);
    header.writeUInt16LE(1, 20);
    header.writeUInt16LE(1, 22);
    header.writeUInt32LE(16_000, 24);
    header.writeUInt32LE(32_000, 28);
    header.writeUInt16LE(2, 32);
    header.writeUInt16LE(16, 34);
    header.write('data', 36);
    header.writeUInt32LE(pcm.length, 40);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(Buffer.concat([header, pcm]))], { type: 'audio/wav' }), 'silence.wav');
    const up = await fetch(`${app.url}/v1/chat/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.key}`, ...ws.brainHeaders },
      body: form,
    });
    expect(up.status).toBe(201);
    const attachment = (await up.json()) as { id: string };
    const before = sim.transcriptionRequests;
    sim.failTranscriptions([500]);
    const started = await app.post('/v1/transcribe', ws.key, {
      source: { type: 'attachment_id', id: attachment.id },
      locale: 'en-US',
      diarize: false,
    });
    expect(started.status, started.text).toBe(202);
    const job = await settleJob(app, ws.key, String(started.body.job_id), 120_000);
    expect(job.status, job.failedReason).toBe('completed');
    expect(sim.transcriptionRequests - before).toBe(2);
    const rows = (await ledger(ws.workspaceId)).filter((r) => r.kind === 'transcription');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      provider: 'openai',
      model: 'whisper-1',
      jobId: job.job_id,
      audioMs: 3000,
      totalTokens: 0,
      priced: true,
    });
    expect(rows[0].costNanos).toBe(Math.round((3000 / 60_000) * 0.006 * 1e9));
    const stats = UsageStats.parse((await app.get(`/v1/usage/${ws.workspaceId}`, ws.key)).body);
    expect(stats.totalCost).toBeCloseTo(rows[0].costNanos / 1e9, 12);
    expect(stats.usageByModel['whisper-1']).toMatchObject({ tokens: 0, priced: true });
    expect(stats.usageRollupIntegrity.allFacetsMatchTotals).toBe(true);
  });

  it("a job's totals are read through its row places (keys) and equal the sum of its rows: a repeated write, a place without a row", async () => {
    const ws = await buildWorkspace(app);
    const jobId = randomUUID();
    const attribution = {
      brainId: null,
      userId: null,
      apiKeyId: null,
      jobId,
      traceId: null,
      receptorId: null,
      neuronId: null,
      pathwayId: null,
    };
    const call = (turn: number, attempt: number, tokens: number) => ({
      key: `${jobId}:chat:${turn}:${attempt}`,
      workspaceId: ws.workspaceId,
      kind: 'chat' as const,
      modelId: 'openai/gpt-4o-mini',
      attribution,
      usage: { inputTokens: tokens, outputTokens: tokens, totalTokens: 2 * tokens },
    });
    expect(await app.services.usage.record(call(1, 1, 10))).toBe(true);
    expect(await app.services.usage.record(call(1, 1, 10))).toBe(false); // the same call again: one row, one place
    expect(await app.services.usage.record(call(1, 2, 7))).toBe(true);
    // A writer that died between its place and its row: the place names no row.
    await app.deps.db
      .collection('usage_job_rows')
      .insertOne({ _id: `${jobId}:3` as never, rowId: `${jobId}:chat:9:9` });
    expect(await app.services.usage.record(call(2, 1, 5))).toBe(true);
    const places = await app.deps.db
      .collection('usage_job_rows')
      .find({ _id: { $in: [1, 2, 3, 4, 5].map((n) => `${jobId}:${n}`) } as never })
      .toArray();
    expect(places.map((p) => p._id).sort()).toEqual([1, 2, 3, 4].map((n) => `${jobId}:${n}`));
    const rows = await app.deps.db
      .collection<UsageRowDoc>('usage_ledger')
      .find({ workspaceId: ws.workspaceId, jobId })
      .toArray();
    expect(rows).toHaveLength(3);
    const totals = await app.services.usage.jobTotals(ws.workspaceId, jobId);
    expect(totals).toMatchObject({ inputTokens: 22, outputTokens: 22, totalTokens: 44, calls: 3 });
    expect(totals.costUsd).toBeCloseTo(sum(rows, (r) => r.costNanos) / 1e9, 12);
    // Another workspace's key finds nothing of this job.
    const other = await buildWorkspace(app);
    expect(await app.services.usage.jobTotals(other.workspaceId, jobId)).toMatchObject({ totalTokens: 0, calls: 0 });
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
    for (const q of [
      'startDate=yesterday',
      'endDate=2026-13-45',
      'receptorId=nope',
      'startDate=2026-02-01&endDate=2026-01-01',
      'startDate=1',
      'endDate=2026-02-30',
      'startDate=March%207%2C%202026',
      'endDate=2026-01-31T25:00:00Z',
    ]) {
      const r = await app.get(`/v1/usage?${q}`, ws.key);
      expect(r.status, q).toBe(400);
      expect(r.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    expect((await app.get(`/v1/usage/${ws.workspaceId}/receptors?sortBy=size`, ws.key)).status).toBe(400);
    expect((await app.get('/v1/usage/not-a-uuid', ws.key)).status).toBe(400);
    const ranking = ReceptorUsageRanking.parse(
      (await app.get(`/v1/usage/${ws.workspaceId}/receptors?sortBy=cost`, ws.key)).body,
    );
    expect(ranking).toMatchObject({ workspaceId: ws.workspaceId, sortBy: 'cost', receptors: [] });
  });
});
