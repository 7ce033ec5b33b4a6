import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeBlob } from '../../src/kernel/store/codec.js';
import type { InterventionDoc } from '../../src/interventions/model.js';
import type { JobDoc } from '../../src/jobs/model.js';
import { TOTAL_CAP } from '../../src/kernel/store/paging.js';
import { emptyCost, type TraceDoc } from '../../src/traces/model.js';
import { buildWorkspace, useTestApp, type TestApp } from '../support/app.js';

/**
 * Lists page by key (src/kernel/store/paging.ts): walking a list by offset and by cursor yields exactly the
 * full sorted scan (ties on the sort key ordered by `_id`), filters hold, another workspace's rows
 * never appear, and `total` is exact up to TOTAL_CAP and a lower bound above it.
 */
const app = useTestApp();

type Body = Record<string, unknown>;
const T0 = Date.parse('2026-01-01T00:00:00Z');
/** Five distinct instants: rows share them, so every page boundary falls inside a run of ties. */
const tied = (i: number) => new Date(T0 + (i % 5) * 60_000);

/** Compares like the store does for the sort value, then `_id` (code-unit order, as MongoDB compares strings). */
const cmp = (a: string | number | Date, b: string | number | Date) => (a < b ? -1 : a > b ? 1 : 0);
function sorted<T extends { _id: string }>(rows: T[], key: (r: T) => string | number | Date, dir: 1 | -1): string[] {
  return [...rows].sort((x, y) => dir * (cmp(key(x), key(y)) || cmp(x._id, y._id))).map((r) => r._id);
}

/** Every page of `path` by offset, then by cursor; returns both id sequences and the pages' bodies. */
async function walk(
  path: string,
  key: string,
  listKey: string,
  idOf: (row: Body) => string,
  limit: number,
  headers?: Record<string, string>,
) {
  const sep = path.includes('?') ? '&' : '?';
  const byOffset: string[] = [];
  const offsetPages: Body[] = [];
  for (let offset = 0; ; offset += limit) {
    const r = await app.get(`${path}${sep}limit=${limit}&offset=${offset}`, key, headers);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    offsetPages.push(r.body);
    byOffset.push(...(r.body[listKey] as Body[]).map(idOf));
    // GET /v1/jobs answers the reference's fields only (no has_more) unless it pages by cursor.
    const more =
      (r.body.has_more as boolean | undefined) ??
      offset + (r.body[listKey] as Body[]).length < (r.body.total as number);
    if (!more) break;
    expect(offsetPages.length).toBeLessThan(100);
  }
  const byCursor: string[] = [];
  const cursorPages: Body[] = [];
  let cursor: string | null = null;
  do {
    const r = await app.get(
      `${path}${sep}limit=${limit}&cursor=${cursor ? encodeURIComponent(cursor) : 'first'}`,
      key,
      headers,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    cursorPages.push(r.body);
    byCursor.push(...(r.body[listKey] as Body[]).map(idOf));
    cursor = r.body.next_cursor as string | null;
    expect(r.body.has_more).toBe(cursor !== null);
    expect(cursorPages.length).toBeLessThan(100);
  } while (cursor);
  return { byOffset, byCursor, offsetPages, cursorPages };
}

function job(workspaceId: string, i: number, over: Partial<JobDoc> = {}): JobDoc {
  const at = tied(i);
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: null,
    kind: 'neuron',
    status: i % 3 === 0 ? 'completed' : 'running',
    progress: 0,
    currentStep: null,
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
    processedAt: at,
    finishedAt: null,
    updatedAt: at,
    ...over,
  };
}

function trace(workspaceId: string, i: number, over: Partial<TraceDoc> = {}): TraceDoc {
  const traceId = randomUUID();
  return {
    _id: randomUUID(),
    traceId,
    workspaceId,
    brainId: null,
    userId: null,
    apiKeyId: null,
    receptorId: null,
    neuronId: null,
    title: i % 4 === 0 ? `Needle ${i}` : `hay ${i}`,
    titleSource: 'manual',
    traceType: i % 7 === 0 ? 'system' : 'thread',
    messageCount: i % 3,
    cost: emptyCost(),
    memoryIds: [],
    metadata: encodeBlob({}),
    createdAt: tied(i + 1),
    updatedAt: tied(i),
    ...over,
  };
}

const insertJobs = (a: TestApp, rows: JobDoc[]) => a.deps.db.collection<JobDoc>('jobs').insertMany(rows);

describe('lists that page by key', () => {
  it('jobs: offset and cursor walks equal the full scan (ties, filters, no other workspace), cursor errors name cursor', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const mine = Array.from({ length: 47 }, (_, i) => job(ws.workspaceId, i));
    await insertJobs(app, [...mine, ...Array.from({ length: 12 }, (_, i) => job(other.workspaceId, i))]);

    const all = sorted(mine, (j) => j.createdAt, -1);
    const w = await walk('/v1/jobs', ws.key, 'jobs', (j) => j.job_id as string, 6);
    expect(w.byOffset).toEqual(all);
    expect(w.byCursor).toEqual(all);
    for (const p of w.offsetPages) expect(p).toMatchObject({ total: 47, limit: 6 });
    for (const p of w.cursorPages) expect(p).toMatchObject({ total: 47, total_exact: true, limit: 6 });

    const completed = sorted(
      mine.filter((j) => j.status === 'completed'),
      (j) => j.createdAt,
      -1,
    );
    const f = await walk('/v1/jobs?status=completed', ws.key, 'jobs', (j) => j.job_id as string, 4);
    expect(f.byOffset).toEqual(completed);
    expect(f.byCursor).toEqual(completed);
    expect(f.cursorPages[0]).toMatchObject({ total: completed.length, total_exact: true });

    // A cursor names a position, not a page: a row inserted before it does not shift what follows.
    const first = await app.get('/v1/jobs?limit=10&cursor=first', ws.key);
    await insertJobs(app, [job(ws.workspaceId, 0, { createdAt: new Date(T0 + 3_600_000) })]);
    const next = await app.get(`/v1/jobs?limit=10&cursor=${first.body.next_cursor as string}`, ws.key);
    expect((next.body.jobs as Body[]).map((j) => j.job_id)).toEqual(all.slice(10, 20));

    const bad = await app.get('/v1/jobs?cursor=not-a-cursor', ws.key);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/^cursor:/) });
    const forged = Buffer.from(JSON.stringify({ s: 'createdAt:-1', v: 'x', d: 1, id: 'a' })).toString('base64url');
    expect((await app.get(`/v1/jobs?cursor=${forged}`, ws.key)).body).toMatchObject({
      message: expect.stringMatching(/^cursor:/),
    });
    const both = await app.get(`/v1/jobs?offset=3&cursor=${first.body.next_cursor as string}`, ws.key);
    expect(both.status).toBe(400);
    // Another workspace walks only its own rows.
    expect((await walk('/v1/jobs', other.key, 'jobs', (j) => j.job_id as string, 5)).byCursor).toHaveLength(12);
  });

  it('jobs: total is exact up to the cap, then a lower bound; the last page of an offset walk is exact again', async () => {
    const ws = await buildWorkspace(app);
    const n = TOTAL_CAP + 17;
    await insertJobs(
      app,
      Array.from({ length: n }, (_, i) => job(ws.workspaceId, i)),
    );
    const first = await app.get('/v1/jobs?limit=5&cursor=first', ws.key);
    expect(first.body).toMatchObject({ total: TOTAL_CAP + 1, total_exact: false, has_more: true });
    expect((first.body.total as number) > (first.body.offset as number) + 5).toBe(true);
    const last = await app.get(`/v1/jobs?limit=10&offset=${n - 7}&cursor=first`, ws.key);
    expect(last.body).toMatchObject({ total: n, total_exact: true, has_more: false, next_cursor: null });
    expect(last.body.jobs as Body[]).toHaveLength(7);
    const deep = await app.get(`/v1/jobs?limit=10&offset=${TOTAL_CAP + 2}&cursor=first`, ws.key);
    expect(deep.body).toMatchObject({ total_exact: false, has_more: true });
    expect(deep.body.total as number).toBeGreaterThan(TOTAL_CAP + 2 + 10);
  });

  it('traces: each sort and direction, trace type, and a search checked on the rows read', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const mine = Array.from({ length: 40 }, (_, i) => trace(ws.workspaceId, i));
    await app.deps.db
      .collection<TraceDoc>('traces')
      .insertMany([
        ...mine,
        ...Array.from({ length: 9 }, (_, i) => trace(other.workspaceId, i, { title: `Needle other ${i}` })),
      ]);
    const threads = mine.filter((t) => t.traceType === 'thread');
    const idOf = (t: Body) => t.trace_id as string;
    const tidOf = new Map(mine.map((t) => [t._id, t.traceId]));
    const ids = (rows: string[]) => rows.map((id) => tidOf.get(id));

    const byUpdated = ids(sorted(threads, (t) => t.updatedAt, -1));
    const d = await walk('/v1/traces', ws.key, 'traces', idOf, 7);
    expect(d.byOffset).toEqual(byUpdated);
    expect(d.byCursor).toEqual(byUpdated);

    const byCount = ids(sorted(mine, (t) => t.messageCount, 1));
    const c = await walk('/v1/traces?trace_type=all&sort=message_count&order=asc', ws.key, 'traces', idOf, 5);
    expect(c.byOffset).toEqual(byCount);
    expect(c.byCursor).toEqual(byCount);

    // A cursor of one sort is refused by another.
    const onUpdated = (await app.get('/v1/traces?limit=3&cursor=first', ws.key)).body.next_cursor as string;
    expect((await app.get(`/v1/traces?sort=created_at&cursor=${onUpdated}`, ws.key)).body).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: expect.stringMatching(/^cursor:/),
    });

    const needles = ids(
      sorted(
        threads.filter((t) => /needle/i.test(t.title ?? '')),
        (t) => t.createdAt,
        -1,
      ),
    );
    const s = await walk('/v1/traces?search=NEEDLE&sort=created_at', ws.key, 'traces', idOf, 3);
    expect(s.byOffset).toEqual(needles);
    expect(s.byCursor).toEqual(needles);
  });

  it('interventions: walks, summary counts, the public token is a key', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const statuses = ['pending', 'approved', 'rejected', 'answered'] as const;
    const jobId = randomUUID();
    const make = (workspaceId: string, i: number): InterventionDoc => ({
      _id: randomUUID(),
      workspaceId,
      brainId: ws.brainId,
      jobId,
      traceId: null,
      pathwayId: null,
      nodeIndex: 0,
      kind: 'approval',
      title: `t${i}`,
      prompt: 'p',
      options: ['approve', 'reject'],
      status: statuses[i % 4]!,
      action: null,
      comment: null,
      fields: null,
      respondedBy: null,
      respondedAt: null,
      expiresAt: null,
      deliveries: [],
      createdAt: tied(i),
      updatedAt: tied(i),
    });
    const mine = Array.from({ length: 23 }, (_, i) => make(ws.workspaceId, i));
    await app.deps.db
      .collection<InterventionDoc>('interventions')
      .insertMany([...mine, ...Array.from({ length: 5 }, (_, i) => make(other.workspaceId, i))]);
    const all = sorted(mine, (r) => r.createdAt, -1);
    const w = await walk('/v1/interventions?brain_scope=all', ws.key, 'interventions', (r) => r.id as string, 4);
    expect(w.byOffset).toEqual(all);
    expect(w.byCursor).toEqual(all);
    const pending = sorted(
      mine.filter((r) => r.status === 'pending'),
      (r) => r.createdAt,
      -1,
    );
    expect(
      (
        await walk(
          '/v1/interventions?brain_scope=all&status=pending',
          ws.key,
          'interventions',
          (r) => r.id as string,
          2,
        )
      ).byCursor,
    ).toEqual(pending);

    const summary = await app.get('/v1/interventions?summary=1&brain_scope=all', ws.key);
    expect(summary.body).toMatchObject({
      byStatus: { pending: 6, approved: 6, rejected: 6, answered: 5, expired: 0, cancelled: 0 },
      grouped: { active: 6, resolved: 17 },
      counts_exact: true,
    });

    // A token carries its intervention's id: found by key; a token of the older form still by its index.
    const created = await app.services.interventions.create(await app.services.auth.authenticate(ws.key), {
      id: randomUUID(),
      jobId,
      traceId: null,
      pathwayId: null,
      brainId: ws.brainId,
      nodeIndex: 0,
      kind: 'approval',
      title: 'Ship?',
      prompt: 'Ship it?',
      options: ['approve', 'reject'],
    });
    const link = created.deliveries.find((x) => x.channel === 'link')!;
    expect(link.token.startsWith(`${created._id}.`)).toBe(true);
    expect(await app.get(`/v1/public/interventions/${link.token}`)).toMatchObject({
      status: 200,
      body: { intervention: { id: created._id } },
    });
    expect((await app.get(`/v1/public/interventions/${created._id}.${'A'.repeat(32)}`)).status).toBe(404);
    const legacy = 'L'.repeat(32);
    await app.deps.db
      .collection<InterventionDoc>('interventions')
      .updateOne({ _id: created._id }, { $set: { 'deliveries.1.token': legacy } });
    expect(await app.get(`/v1/public/interventions/${legacy}`)).toMatchObject({
      status: 200,
      body: { intervention: { id: created._id } },
    });
  });

  it('memories: ties on name walk in _id order; budgets and API keys page too', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const made: { id: string; name: string }[] = [];
    for (let i = 0; i < 11; i++) {
      const r = await app.post('/v1/memories', ws.key, {
        name: `m${i % 3}`,
        source_type: 'text',
        brain_id: ws.brainId,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      made.push({ id: (r.body.id ?? (r.body.memory as Body).id) as string, name: `m${i % 3}` });
    }
    await app.post('/v1/memories', other.key, { name: 'm0', source_type: 'text', brain_id: other.brainId });
    const expected = sorted(
      made.map((m) => ({ _id: m.id, name: m.name })),
      (m) => m.name,
      1,
    );
    const w = await walk(
      '/v1/memories?sortBy=name&sortDirection=asc',
      ws.key,
      'memories',
      (m) => m.id as string,
      3,
      ws.brainHeaders,
    );
    expect(w.byOffset).toEqual(expected);
    expect(w.byCursor).toEqual(expected);

    for (const period of ['day', 'month', 'total']) {
      expect(
        (await app.post('/v1/budgets', ws.key, { scope: 'workspace', measure: 'tokens', period, limit: 1000 })).status,
      ).toBe(201);
    }
    const b = await walk('/v1/budgets', ws.key, 'budgets', (x) => x.id as string, 2);
    expect(b.byCursor).toHaveLength(3);
    expect(b.byOffset).toEqual(b.byCursor);

    const jwt = await ws.jwt();
    for (let i = 0; i < 3; i++) expect((await app.post('/v1/api-keys', jwt, { name: `k${i}` })).status).toBe(201);
    const k = await walk('/v1/api-keys', jwt, 'api_keys', (x) => x.id as string, 2);
    expect(k.byOffset).toEqual(k.byCursor);
    expect(k.byCursor.length).toBeGreaterThanOrEqual(3);
  });
});
