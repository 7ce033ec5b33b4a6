/**
 * The tenancy store (src/tenancy/store.mongo.ts): retention settings per workspace; expiry of each
 * kind bounded by its limit, with children and blob keys, only ended rows past the window and
 * only the workspace's; the storage report; erasing a workspace batch by batch; its rows read for
 * an archive and written back; deletions known only by a digest. Rows are seeded in their stored
 * shapes (the store reads other areas' rows by shape).
 */
import { randomUUID } from 'node:crypto';
import type { Document } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { createTenancyStore, type DeletionDoc } from '../../src/tenancy/index.js';
import { workspaceDigest } from '../../src/tenancy/model.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

const HOUR = 3_600_000;
const old = new Date('2026-01-01T10:15:00.000Z');
const cutoff = new Date('2026-02-01T00:00:00.000Z');
const recent = new Date('2026-03-01T00:00:00.000Z');
type Row = Document & { _id: string };
const raw = (name: string) => h.db.collection<Row>(name);
const ids = async (name: string, filter: Document) =>
  (await raw(name).find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id);

describe('tenancy store', () => {
  const store = createTenancyStore(h.db);

  it('keeps retention settings per workspace, replaced whole', async () => {
    const ws = randomUUID();
    expect(await store.settings(ws)).toBeNull();
    expect(await store.saveSettings(ws, { jobs: 30, traces: null })).toMatchObject({
      _id: ws,
      workspaceId: ws,
      windows: { jobs: 30, traces: null },
    });
    expect((await store.saveSettings(ws, { interventions: 7 })).windows).toEqual({ interventions: 7 });
    expect(await store.settings(randomUUID())).toBeNull();
  });

  it('expires ended jobs past the window with their working sets, bounded by the limit', async () => {
    const ws = randomUUID();
    const other = randomUUID();
    const job = (id: string, o: Document) => ({ _id: id, workspaceId: ws, kind: 'neuron', ...o });
    await raw('jobs').insertMany([
      job(`${ws}-a`, { status: 'completed', finishedAt: old }),
      job(`${ws}-b`, { status: 'failed', finishedAt: old }),
      job(`${ws}-running`, { status: 'running', finishedAt: null }),
      job(`${ws}-recent`, { status: 'completed', finishedAt: recent }),
      job(`${other}-a`, { workspaceId: other, status: 'completed', finishedAt: old }),
    ]);
    for (const c of ['run_contexts', 'pathway_trails']) await raw(c).insertOne({ _id: `${ws}-a`, workspaceId: ws });
    await raw('run_steps').insertMany([
      { _id: `${ws}-a:m:0:0`, jobId: `${ws}-a` },
      { _id: `${ws}-a:t:0:c`, jobId: `${ws}-a`, blobKey: 'k/step' },
      { _id: `${ws}-running:m:0:0`, jobId: `${ws}-running` },
    ]);

    const first = await store.expire(ws, 'jobs', cutoff, 1);
    expect(first.jobIds).toHaveLength(1);
    const second = await store.expire(ws, 'jobs', cutoff, 10);
    expect([...first.jobIds, ...second.jobIds].sort()).toEqual([`${ws}-a`, `${ws}-b`]);
    const byA = first.jobIds[0] === `${ws}-a` ? first : second;
    expect(byA.rows).toEqual({ run_contexts: 1, pathway_trails: 1, run_steps: 2, jobs: 1 });
    expect(byA.blobKeys).toEqual(['k/step']);
    expect(await ids('jobs', { workspaceId: ws })).toEqual([`${ws}-recent`, `${ws}-running`]);
    expect(await ids('jobs', { workspaceId: other })).toEqual([`${other}-a`]);
    expect(await ids('run_steps', { jobId: { $regex: `^${ws}` } })).toEqual([`${ws}-running:m:0:0`]);
    expect((await store.expire(ws, 'jobs', cutoff, 10)).rows).toEqual({});
  });

  it('expires traces with their engrams and engram places', async () => {
    const ws = randomUUID();
    const t = randomUUID();
    const keep = randomUUID();
    await raw('traces').insertMany([
      { _id: t, traceId: t, workspaceId: ws, updatedAt: old },
      { _id: keep, traceId: keep, workspaceId: ws, updatedAt: recent },
    ]);
    await raw('engrams').insertMany([
      { _id: randomUUID(), workspaceId: ws, traceId: t, seq: 1, blobKey: 'assets/e1' },
      { _id: randomUUID(), workspaceId: ws, traceId: keep, seq: 1 },
    ]);
    await raw('engram_places').insertMany([{ _id: `${t}:0` }, { _id: `${t}:1` }, { _id: `${keep}:0` }]);
    const out = await store.expire(ws, 'traces', cutoff, 10);
    expect(out).toMatchObject({
      traceIds: [t],
      blobKeys: ['assets/e1'],
      rows: { engrams: 1, traces: 1, engram_places: 2 },
    });
    expect(await ids('traces', { workspaceId: ws })).toEqual([keep]);
    expect(await ids('engram_places', { _id: { $in: [`${t}:0`, `${keep}:0`] } })).toEqual([`${keep}:0`]);
  });

  it('expires answered interventions, ended transcripts with chunks, finished deliveries; never pending ones', async () => {
    const ws = randomUUID();
    await raw('interventions').insertMany([
      { _id: `${ws}-done`, workspaceId: ws, status: 'approved', updatedAt: old },
      { _id: `${ws}-pending`, workspaceId: ws, status: 'pending', updatedAt: old },
    ]);
    expect((await store.expire(ws, 'interventions', cutoff, 10)).rows).toEqual({ interventions: 1 });
    expect(await ids('interventions', { workspaceId: ws })).toEqual([`${ws}-pending`]);

    await raw('transcription_sessions').insertMany([
      { _id: `${ws}-s1`, workspaceId: ws, status: 'ready', startedAt: old },
      { _id: `${ws}-s2`, workspaceId: ws, status: 'live', startedAt: old },
    ]);
    await raw('transcription_chunks').insertMany([
      { _id: `${ws}-c1`, workspaceId: ws, sessionId: `${ws}-s1`, blobKey: 'audio/c1', bytes: 5 },
      { _id: `${ws}-c2`, workspaceId: ws, sessionId: `${ws}-s2` },
    ]);
    const tr = await store.expire(ws, 'transcripts', cutoff, 10);
    expect(tr).toMatchObject({ sessionIds: [`${ws}-s1`], blobKeys: ['audio/c1'] });
    expect(tr.rows).toEqual({ transcription_chunks: 1, transcription_sessions: 1 });

    await raw('webhook_deliveries').insertMany([
      { _id: `${ws}-d1`, workspaceId: ws, finishedAt: old },
      { _id: `${ws}-d2`, workspaceId: ws, finishedAt: null },
    ]);
    expect((await store.expire(ws, 'webhook_deliveries', cutoff, 10)).rows).toEqual({ webhook_deliveries: 1 });
    expect(await ids('webhook_deliveries', { workspaceId: ws })).toEqual([`${ws}-d2`]);
  });

  it('expires usage rows only of hours stored as a rollup', async () => {
    const ws = randomUUID();
    const rolled = new Date(Math.floor(old.getTime() / HOUR) * HOUR);
    await raw('usage_rollups').insertOne({ _id: randomUUID(), workspaceId: ws, hour: rolled });
    await raw('usage_ledger').insertMany([
      { _id: `${ws}-r1`, workspaceId: ws, at: old },
      { _id: `${ws}-r2`, workspaceId: ws, at: new Date(old.getTime() - 2 * HOUR) },
    ]);
    await raw('usage_job_rows').insertOne({ _id: `${ws}-j1`, rowId: `${ws}-r1` });
    const out = await store.expire(ws, 'usage_rows', cutoff, 10);
    expect(out.rows).toEqual({ usage_job_rows: 1, usage_ledger: 1 });
    expect(await ids('usage_ledger', { workspaceId: ws })).toEqual([`${ws}-r2`]);
  });

  it("reports a workspace's rows, estimated bytes and blob bytes; lists owned ids in order", async () => {
    const ws = randomUUID();
    await raw('memories').insertMany([
      { _id: `${ws}-m1`, workspaceId: ws, blobKey: 'memories/1', size: 100 },
      { _id: `${ws}-m2`, workspaceId: ws, blobKey: 'memories/2', size: 23 },
      { _id: `${ws}-m3`, workspaceId: ws, text: 'no blob', size: 1000 },
    ]);
    await raw('jobs').insertOne({ _id: `${ws}-j`, workspaceId: ws, status: 'running' });
    await raw('run_steps').insertMany([
      { _id: `${ws}-j:m:0:0`, jobId: `${ws}-j` },
      { _id: `${ws}-j:m:1:0`, jobId: `${ws}-j` },
    ]);
    await raw('memories').insertOne({ _id: `${randomUUID()}-m`, workspaceId: randomUUID(), blobKey: 'x', size: 7 });
    const u = await store.usage(ws);
    expect(u.collections.memories.rows).toBe(3);
    expect(u.collections.memories.bytes).toBeGreaterThan(0);
    expect(u.collections.jobs.rows).toBe(1);
    expect(u.collections.run_steps.rows).toBe(2);
    expect(u.blobBytes).toBe(123);
    expect(Object.keys(u.collections).sort()).toEqual(['jobs', 'memories', 'run_steps']);

    expect(await store.ownedIds('memories', ws, null, 2)).toEqual([`${ws}-m1`, `${ws}-m2`]);
    expect(await store.ownedIds('memories', ws, `${ws}-m2`, 2)).toEqual([`${ws}-m3`]);
    expect(await store.ownedIds('memories', randomUUID(), null, 2)).toEqual([]);
    expect(await store.collections()).not.toContain('workspace_deletions');
  });

  it("reads a workspace's rows with their children, writes them back, erases them batch by batch", async () => {
    const ws = randomUUID();
    const other = randomUUID();
    await raw('workspaces').insertOne({ _id: ws, slug: `s-${ws.slice(0, 8)}`, name: 'w', createdAt: old });
    await raw('jobs').insertMany([
      { _id: `${ws}-j1`, workspaceId: ws, kind: 'neuron', parentJobId: null, status: 'completed', createdAt: old },
      { _id: `${other}-j1`, workspaceId: other, kind: 'neuron', status: 'completed' },
    ]);
    await raw('run_steps').insertOne({ _id: `${ws}-j1:m:0:0`, jobId: `${ws}-j1`, text: '"a\\u0000b"' });
    await raw('neurons').insertMany(
      [1, 2, 3].map((i) => ({
        _id: `${ws}-n${i}`,
        workspaceId: ws,
        name: `n${i}`,
        at: old,
        nested: { 'a-b': [1, { c: null }] },
      })),
    );
    await raw('trace_holds').insertMany([{ _id: `hold:${ws}:x` }, { _id: `hold:${other}:x` }]);

    const rows: { collection: string; doc: Record<string, unknown> }[] = [];
    for await (const r of store.rowsOf(ws)) rows.push(r);
    const seen = rows.map((r) => `${r.collection}/${String(r.doc._id)}`);
    expect(seen.indexOf(`run_steps/${ws}-j1:m:0:0`)).toBe(seen.indexOf(`jobs/${ws}-j1`) + 1);
    expect(seen).toContain(`workspaces/${ws}`);
    expect(seen.filter((s) => s.startsWith('neurons/'))).toEqual([1, 2, 3].map((i) => `neurons/${ws}-n${i}`));
    expect(seen.some((s) => s.includes(other) || s.startsWith('trace_holds/'))).toBe(false);

    expect(await store.workspaceExists(ws)).toBe(true);
    const erased: Record<string, number> = {};
    const jobIds: string[] = [];
    for (let i = 0; i < 20; i++) {
      const b = await store.eraseBatch(ws, 2);
      if (!Object.keys(b.rows).length) break;
      for (const [k, n] of Object.entries(b.rows)) erased[k] = (erased[k] ?? 0) + n;
      jobIds.push(...b.jobIds);
    }
    expect(erased).toEqual({ jobs: 1, run_steps: 1, neurons: 3, trace_holds: 1 });
    expect(jobIds).toEqual([`${ws}-j1`]);
    expect(await ids('neurons', { workspaceId: ws })).toEqual([]);
    expect(await ids('jobs', { workspaceId: other })).toEqual([`${other}-j1`]);
    expect(await ids('trace_holds', {})).toEqual([`hold:${other}:x`]);
    expect(await store.workspaceExists(ws)).toBe(true);

    // The archive's rows written back are what was read (jobs gain their derived place flag).
    await raw('workspaces').deleteOne({ _id: ws });
    const by = new Map<string, Record<string, unknown>[]>();
    for (const r of rows) by.set(r.collection, [...(by.get(r.collection) ?? []), r.doc]);
    for (const [c, docs] of by) await store.insertRows(c, docs);
    const again: typeof rows = [];
    for await (const r of store.rowsOf(ws)) again.push(r);
    const job = again.find((r) => r.collection === 'jobs')!.doc;
    expect(job.holdsPlace).toBe(true);
    const { holdsPlace: _, ...jobBack } = job;
    expect(jobBack).toEqual(rows.find((r) => r.collection === 'jobs')!.doc);
    expect(again.filter((r) => r.collection !== 'jobs')).toEqual(rows.filter((r) => r.collection !== 'jobs'));
  });

  it('lists API keys and share tokens by digest; deletes ids', async () => {
    const ws = randomUUID();
    await raw('api_keys').insertOne({ _id: `${ws}-k`, workspaceId: ws, hash: 'h1' });
    await raw('share_tokens').insertOne({ _id: `${ws}-s`, workspaceId: ws, receptorId: randomUUID(), tokenHash: 'h2' });
    expect(await store.apiKeys(ws)).toEqual([{ id: `${ws}-k`, hash: 'h1' }]);
    expect(await store.shareTokens(ws)).toEqual([{ id: `${ws}-s`, hash: 'h2' }]);
    expect(await store.apiKeys(randomUUID())).toEqual([]);
    await store.deleteIds('api_keys', [`${ws}-k`, 'nope']);
    expect(await store.apiKeys(ws)).toEqual([]);
  });

  it('knows a deleted workspace only by its digest; an import forgets it; progress adds up', async () => {
    const ws = randomUUID();
    const d: DeletionDoc = {
      _id: randomUUID(),
      workspaceDigest: workspaceDigest(ws),
      status: 'running',
      progress: 0,
      currentStep: 'rows',
      deleted: {},
      error: null,
      startedAt: old,
      updatedAt: old,
      finishedAt: null,
    };
    expect(await store.isDeleted(ws)).toBe(false);
    await store.deletions.create(d);
    expect(JSON.stringify(await store.deletions.get(d._id))).not.toContain(ws);
    expect(await store.isDeleted(ws)).toBe(true);
    expect(await store.isDeleted(randomUUID())).toBe(false);
    await store.deletions.update(d._id, { progress: 50 }, { jobs: 3, neurons: 1 });
    await store.deletions.update(d._id, { currentStep: 'blobs' }, { jobs: 2 });
    expect(await store.deletions.get(d._id)).toMatchObject({
      progress: 50,
      currentStep: 'blobs',
      deleted: { jobs: 5, neurons: 1 },
      startedAt: old,
    });
    await store.forgetDeleted(ws);
    expect(await store.isDeleted(ws)).toBe(false);
    expect(await store.deletions.get(randomUUID())).toBeNull();
  });
});
