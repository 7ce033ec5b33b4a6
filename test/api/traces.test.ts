import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeBlob } from '../../src/kernel/store/codec.js';
import { placeKey, traceKey, type EngramDoc, type EngramPlaceDoc, type TraceDoc } from '../../src/traces/model.js';
import { Engram, Trace, TraceList } from '../../src/traces/schemas.js';
import { buildWorkspace, useTestApp } from '../support/app.js';
import { sample } from '../support/metrics.js';
import { dataOf, readSse } from '../support/sse.js';

const app = useTestApp();

describe('traces', () => {
  it('POST /v1/traces/:id/messages creates the trace on the first message and keeps API order', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    const first = await app.post(`/v1/traces/${traceId}/messages`, ws.key, {
      content: 'hello',
      metadata: { 'a.b': 1, $x: [[1, 2]] },
    });
    expect(first.status).toBe(201);
    const engram = Engram.parse(first.body.engram);
    expect(engram.source_type).toBe('user');
    expect(engram.content).toEqual({ type: 'human', content: 'hello' });
    expect(engram.content_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(engram.metadata).toEqual({ 'a.b': 1, $x: [[1, 2]] });
    for (const c of ['two', 'three'])
      expect((await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: c })).status).toBe(201);

    const msgs = await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key);
    expect(msgs.body.engrams.map((e) => Engram.parse(e).content.content)).toEqual(['hello', 'two', 'three']);
    const limited = await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages?limit=2`, ws.key);
    expect(limited.body.engrams).toHaveLength(2);

    const t = await app.get(`/v1/traces/${traceId}`, ws.key);
    const trace = Trace.parse(t.body.trace);
    expect(trace.message_count).toBe(3);
    expect(trace.tenant_id).toBe(ws.workspaceId);
    expect(trace.cost_summary).toEqual({ total_cost_usd: 0, total_tokens: 0, input_tokens: 0, output_tokens: 0 });
  });

  it('a message to an existing trace reads the trace once (the read that resolves the path gives the append its count)', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    expect((await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'first' })).status).toBe(201);
    const traceFinds = async () =>
      sample(await (await fetch(`${app.url}/metrics`)).text(), 'cortex_mongo_commands_total', {
        command: 'find',
        collection: 'traces',
      });
    const before = await traceFinds();
    for (let i = 0; i < 10; i++)
      expect((await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: `m${i}` })).status).toBe(201);
    // One read each (20 before this change); a little room for a sweep of the platform's own.
    expect((await traceFinds()) - before).toBeLessThanOrEqual(13);
    const t = Trace.parse((await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace);
    expect(t.message_count).toBe(11);
  });

  it('concurrent messages to one trace keep distinct positions and an exact count', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    const res = await Promise.all(
      Array.from({ length: 12 }, (_, i) => app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: `c${i}` })),
    );
    expect(res.every((r) => r.status === 201)).toBe(true);
    const t = await app.get(`/v1/traces/${traceId}`, ws.key);
    expect(Trace.parse(t.body.trace).message_count).toBe(12);
    const msgs = await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key);
    expect(new Set(msgs.body.engrams.map((e) => Engram.parse(e).content.content)).size).toBe(12);
  });

  it('links memory_ids and validates the body', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    const mem = randomUUID();
    const r = await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'x', memory_ids: [mem] });
    expect(Engram.parse(r.body.engram).memory_ids).toEqual([mem]);
    const bad = await app.post(`/v1/traces/${traceId}/messages`, ws.key, { metadata: {} });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(bad.body.message)).toContain('content');
    const badMem = await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'x', memory_ids: ['nope'] });
    expect(badMem.status).toBe(400);
    const malformed = await app.request('POST', `/v1/traces/${traceId}/messages`, {
      auth: ws.key,
      raw: '{"content": ',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    // Bad input never loses data already stored.
    expect((await app.get(`/v1/traces/${traceId}`, ws.key)).body).toMatchObject({ trace: { message_count: 1 } });
  });

  it('400 for a malformed id, 404 for a missing trace and for another workspace', async () => {
    const a = await buildWorkspace(app);
    const b = await buildWorkspace(app);
    const traceId = randomUUID();
    await app.post(`/v1/traces/${traceId}/messages`, a.key, { content: 'secret' });
    expect((await app.get('/v1/traces/not-a-uuid', a.key)).status).toBe(400);
    expect((await app.get(`/v1/traces/${randomUUID()}`, a.key)).status).toBe(404);
    const cross = await app.get(`/v1/traces/${traceId}`, b.key);
    expect(cross.status).toBe(404);
    expect(cross.body).toEqual({ message: 'Trace not found', code: 'NOT_FOUND' });
    expect((await app.get(`/v1/traces/${traceId}/messages`, b.key)).status).toBe(404);
    const list = await app.get('/v1/traces', b.key);
    expect(TraceList.parse(list.body).total).toBe(0);
  });

  it('the id a trace list shows works in trace paths as trace_id does; another workspace cannot use it', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const traceId = randomUUID();
    await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'first' });
    const listed = TraceList.parse((await app.get('/v1/traces', ws.key)).body).traces;
    const { id } = listed.find((t) => t.trace_id === traceId)!;
    expect(id).not.toBe(traceId);

    const byId = await app.get(`/v1/traces/${id}`, ws.key);
    expect(byId.status).toBe(200);
    expect(Trace.parse(byId.body.trace)).toMatchObject({ id, trace_id: traceId });
    // A message posted to the record id joins the same trace (no second trace is made).
    expect((await app.post(`/v1/traces/${id}/messages`, ws.key, { content: 'second' })).status).toBe(201);
    const msgs = await app.get<{ engrams: unknown[] }>(`/v1/traces/${id}/messages`, ws.key);
    expect(msgs.body.engrams.map((e) => Engram.parse(e))).toMatchObject([
      { trace_id: traceId, content: { content: 'first' } },
      { trace_id: traceId, content: { content: 'second' } },
    ]);
    expect((await app.patch(`/v1/traces/${id}`, ws.key, { title: 'By record id' })).status).toBe(200);
    expect((await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace).toMatchObject({
      title: 'By record id',
      message_count: 2,
    });
    expect(TraceList.parse((await app.get('/v1/traces', ws.key)).body).total).toBe(1);
    // The trace's events by the record id: a message to its trace id shows on that stream.
    const events = await readSse(`${app.url}/v1/traces/${id}/events`, {
      headers: { authorization: `Bearer ${ws.key}` },
      onOpen: async () => void (await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'third' })),
      until: (evs) => evs.some((e) => JSON.stringify(dataOf(e)).includes('third')),
    });
    expect(events.status).toBe(200);
    expect(events.events.some((e) => JSON.stringify(dataOf(e)).includes('third'))).toBe(true);

    // Another workspace: 404 by either id, and a message to the record id starts its own trace.
    expect((await app.get(`/v1/traces/${id}`, other.key)).status).toBe(404);
    expect((await app.get(`/v1/traces/${id}/messages`, other.key)).status).toBe(404);
    expect((await app.post(`/v1/traces/${id}/messages`, other.key, { content: 'mine' })).status).toBe(201);
    const mine = TraceList.parse((await app.get('/v1/traces', other.key)).body).traces;
    expect(mine.map((t) => t.trace_id)).toEqual([id]);
    expect((await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace).toMatchObject({ message_count: 3 });
  });

  it('a trace is stored under a key derived from its workspace and id, and a trace stored before that (random key) still works', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    expect((await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'keyed' })).status).toBe(201);
    const stored = await app.deps.db.collection<TraceDoc>('traces').findOne({ workspaceId: ws.workspaceId, traceId });
    expect(stored?._id).toBe(traceKey(ws.workspaceId, traceId));
    expect(traceKey(ws.workspaceId, traceId)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(traceKey(randomUUID(), traceId)).not.toBe(stored?._id);

    // A trace written by earlier code: random _id, found through the (workspace, trace) index.
    const legacyId = randomUUID();
    const legacyKey = randomUUID();
    const now = new Date();
    await app.deps.db.collection<TraceDoc>('traces').insertOne({
      _id: legacyKey,
      traceId: legacyId,
      workspaceId: ws.workspaceId,
      brainId: null,
      userId: null,
      apiKeyId: null,
      receptorId: null,
      neuronId: null,
      title: null,
      titleSource: null,
      traceType: 'thread',
      messageCount: 0,
      cost: { totalCostUsd: 0, totalTokens: 0, inputTokens: 0, outputTokens: 0 },
      memoryIds: [],
      metadata: encodeBlob({}),
      createdAt: now,
      updatedAt: now,
    });
    for (const c of ['one', 'two'])
      expect((await app.post(`/v1/traces/${legacyId}/messages`, ws.key, { content: c })).status).toBe(201);
    const t = await app.get(`/v1/traces/${legacyId}`, ws.key);
    expect(t.status).toBe(200);
    expect(Trace.parse(t.body.trace)).toMatchObject({ id: legacyKey, message_count: 2 });
    expect((await app.patch(`/v1/traces/${legacyId}`, ws.key, { title: 'Old one' })).status).toBe(200);
    expect((await app.get(`/v1/traces/${legacyId}`, ws.key)).body.trace).toMatchObject({ title: 'Old one' });
  });

  it('engrams are found by their places (keys): a trace from before places, and a place lost by a writer that died, are rebuilt', async () => {
    const ws = await buildWorkspace(app);
    const places = app.deps.db.collection<EngramPlaceDoc>('engram_places');
    const engrams = app.deps.db.collection<EngramDoc>('engrams');
    const traceId = randomUUID();
    for (const c of ['a', 'b', 'c'])
      expect((await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: c })).status).toBe(201);
    const key = traceKey(ws.workspaceId, traceId);
    const stored = await engrams.find({ workspaceId: ws.workspaceId, traceId }).sort({ seq: 1 }).toArray();
    const placed = await Promise.all([1, 2, 3].map((n) => places.findOne({ _id: placeKey(key, n) })));
    expect(placed.map((p) => p?.engramId)).toEqual(stored.map((e) => e._id));
    expect(placed[2]?.totals).toEqual(stored[2]?.totals);
    const contents = async () =>
      (
        (await app.get(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams as { content: { content: string } }[]
      ).map((e) => e.content.content);

    // Places gone (a trace written before them, or writers that died between engram and place):
    // reads and appends still see every engram in order, and write the places back.
    await places.deleteMany({ _id: { $in: [placeKey(key, 2), placeKey(key, 3)] } });
    expect(await contents()).toEqual(['a', 'b', 'c']);
    expect(await places.countDocuments({ _id: { $in: [1, 2, 3].map((n) => placeKey(key, n)) } })).toBe(3);
    await places.deleteMany({ _id: { $in: [placeKey(key, 3)] } });
    expect((await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'd' })).status).toBe(201);
    // The hole at the trace's head: an engram at seq 5 whose writer died before its place.
    const orphan = { ...stored[0]!, _id: randomUUID(), seq: 5, content: { type: 'human', content: 'e' } };
    await engrams.insertOne(orphan);
    expect((await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'f' })).status).toBe(201);
    expect(await contents()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect((await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace).toMatchObject({ message_count: 6 });
    expect((await app.get(`/v1/traces/${traceId}/messages?limit=2`, ws.key)).body.engrams).toHaveLength(2);
    // A run's context: only the newest engrams, by key and (places missing) by the query alike.
    const scope = await app.services.auth.authenticate(ws.key);
    const newest = async (k: number) =>
      (await app.services.traces.messages(scope, traceId, undefined, k)).map((e) => e.content.content);
    expect(await newest(2)).toEqual(['e', 'f']);
    expect(await newest(10)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    await places.deleteMany({ _id: { $in: [placeKey(key, 1)] } });
    expect(await newest(3)).toEqual(['d', 'e', 'f']);
    expect(await newest(6)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('a trace started with an engram id stored before (a retried invoke) keeps no place of its own claim: its first place is the engram that holds it', async () => {
    const ws = await buildWorkspace(app);
    const places = app.deps.db.collection<EngramPlaceDoc>('engram_places');
    const engrams = app.deps.db.collection<EngramDoc>('engrams');
    const scope = await app.services.auth.authenticate(ws.key);
    const id = randomUUID();
    const human = {
      id,
      content: { type: 'human', content: 'hello' },
      metadata: {},
      sourceType: 'user',
      sourceId: ws.workspaceId,
    };
    const first = randomUUID();
    await app.services.traces.start(scope, first, human);
    // The same engram id on a new trace (start claims the trace, the engram and place 1 together):
    // the engram claim loses, so the place claimed for it is withdrawn and the stored engram answered.
    const second = randomUUID();
    const again = await app.services.traces.start(scope, second, human);
    expect(again._id).toBe(id);
    expect(again.traceId).toBe(first);
    expect(await places.findOne({ _id: placeKey(traceKey(ws.workspaceId, second), 1) })).toBeNull();
    // A trace whose seq 1 is held by another engram whose writer died before its place: the place
    // claimed alongside a losing engram claim is withdrawn, and the append writes the holder's place.
    const third = randomUUID();
    const holder = {
      ...(await engrams.findOne({ _id: id }))!,
      _id: randomUUID(),
      traceId: third,
      content: { type: 'human', content: 'held' },
    };
    await engrams.insertOne(holder);
    const next = await app.services.traces.start(scope, third, {
      ...human,
      id: randomUUID(),
      content: { type: 'human', content: 'next' },
    });
    expect(next.seq).toBe(2);
    expect((await places.findOne({ _id: placeKey(traceKey(ws.workspaceId, third), 1) }))?.engramId).toBe(holder._id);
    expect((await app.services.traces.messages(scope, third)).map((e) => e.content.content)).toEqual(['held', 'next']);
  });
  it('401 without a valid credential', async () => {
    expect((await app.get('/v1/traces')).body).toMatchObject({ code: 'AUTH_REQUIRED' });
    expect((await app.get('/v1/traces', 'ctx_wrong')).status).toBe(401);
  });

  it('lists with filters, search over trace_id and title, sort, paging and has_more', async () => {
    const ws = await buildWorkspace(app);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const [i, id] of ids.entries()) {
      for (let n = 0; n <= i; n++) await app.post(`/v1/traces/${id}/messages`, ws.key, { content: `m${n}` });
    }
    await app.patch(`/v1/traces/${ids[1]}`, ws.key, { title: 'Quarterly Planning' });
    const all = TraceList.parse((await app.get('/v1/traces?sort=message_count&order=desc', ws.key)).body);
    expect(all.total).toBe(3);
    expect(all.traces.map((t) => t.trace_id)).toEqual([ids[2], ids[1], ids[0]]);
    const page = TraceList.parse((await app.get('/v1/traces?limit=2&offset=0&sort=created_at&order=asc', ws.key)).body);
    expect(page).toMatchObject({ total: 3, limit: 2, offset: 0, has_more: true });
    expect(page.traces[0].trace_id).toBe(ids[0]);
    const last = TraceList.parse((await app.get('/v1/traces?limit=2&offset=2', ws.key)).body);
    expect(last.has_more).toBe(false);
    expect(TraceList.parse((await app.get('/v1/traces', ws.key)).body).limit).toBe(20);
    const byTitle = TraceList.parse((await app.get('/v1/traces?search=planning', ws.key)).body);
    expect(byTitle.traces.map((t) => t.trace_id)).toEqual([ids[1]]);
    expect(byTitle.traces[0].title).toBe('Quarterly Planning');
    expect(byTitle.traces[0].metadata.title).toBe('Quarterly Planning');
    const byId = TraceList.parse((await app.get(`/v1/traces?search=${ids[2].slice(0, 13)}`, ws.key)).body);
    expect(byId.traces.map((t) => t.trace_id)).toEqual([ids[2]]);
    const future = TraceList.parse(
      (
        await app.get(
          `/v1/traces?created_after=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
          ws.key,
        )
      ).body,
    );
    expect(future.total).toBe(0);
    const past = TraceList.parse(
      (
        await app.get(
          `/v1/traces?created_before=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
          ws.key,
        )
      ).body,
    );
    expect(past.total).toBe(3);
    expect((await app.get(`/v1/traces?brain_id=${ws.brainId}`, ws.key)).status).toBe(200);
    expect((await app.get(`/v1/traces?user_id=${randomUUID()}`, ws.key)).body).toMatchObject({ total: 0 });
    expect((await app.get(`/v1/traces?receptor_id=${randomUUID()}`, ws.key)).body).toMatchObject({ total: 0 });
    expect((await app.get('/v1/traces?sort=bogus', ws.key)).status).toBe(400);
    expect((await app.get('/v1/traces?created_after=yesterday', ws.key)).status).toBe(400);
    expect((await app.get('/v1/traces?limit=-1', ws.key)).status).toBe(400);
  });

  it('neuron_id needs brain scope', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = randomUUID();
    expect((await app.get(`/v1/traces?neuron_id=${neuronId}`, ws.key)).status).toBe(400);
    const ok = await app.get(`/v1/traces?neuron_id=${neuronId}`, ws.key, ws.brainHeaders);
    expect(ok.status).toBe(200);
    expect((await app.get(`/v1/traces?neuron_id=${neuronId}`, ws.key, { 'x-brain-id': 'nope' })).status).toBe(400);
    expect((await app.get(`/v1/traces?neuron_id=${neuronId}`, ws.key, { 'x-brain-id': randomUUID() })).status).toBe(
      404,
    );
  });

  it('a manual title overrides a generated one and is not replaced by later generation', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'hi' });
    const scope = {
      workspaceId: ws.workspaceId,
      userId: null,
      apiKeyId: null,
      roles: [],
      credential: 'system' as const,
    };
    await app.services.traces.setTitle(scope, traceId, 'Generated', 'generated');
    expect((await app.get(`/v1/traces/${traceId}`, ws.key)).body).toMatchObject({ trace: { title: 'Generated' } });
    expect((await app.patch(`/v1/traces/${traceId}`, ws.key, { title: 'Mine' })).status).toBe(200);
    await app.services.traces.setTitle(scope, traceId, 'Generated again', 'generated');
    expect((await app.get(`/v1/traces/${traceId}`, ws.key)).body).toMatchObject({ trace: { title: 'Mine' } });
    expect((await app.patch(`/v1/traces/${randomUUID()}`, ws.key, { title: 'x' })).status).toBe(404);
    expect((await app.patch(`/v1/traces/${traceId}`, ws.key, { title: '' })).status).toBe(400);
  });

  it('trace events: a new message appears on the stream; after= and Last-Event-ID resume with only later entries', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'one' });
    const url = `${app.url}/v1/traces/${traceId}/events`;
    const headers = { authorization: `Bearer ${ws.key}` };
    const live = await readSse(url, {
      headers,
      until: (ev) => ev.length >= 2,
      onOpen: async () => {
        await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'two' });
      },
    });
    expect(live.status).toBe(200);
    expect(live.contentType).toContain('text/event-stream');
    expect(live.events.map((e) => (dataOf(e).content as { content: string }).content)).toEqual(['one', 'two']);
    expect(live.events[0].id).toMatch(/^\d+-\d+$/);
    await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'three' });
    const cursor = live.events[0].id!;
    const resumed = await readSse(`${url}?after=${cursor}`, { headers, until: (ev) => ev.length >= 2 });
    expect(resumed.events.map((e) => (dataOf(e).content as { content: string }).content)).toEqual(['two', 'three']);
    const byHeader = await readSse(url, {
      headers: { ...headers, 'last-event-id': live.events[1].id! },
      until: (ev) => ev.length >= 1,
    });
    expect(byHeader.events.map((e) => (dataOf(e).content as { content: string }).content)).toEqual(['three']);
    expect((await app.get(`/v1/traces/${traceId}/events?after=garbage`, ws.key)).status).toBe(400);
    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/traces/${traceId}/events`, other.key)).status).toBe(404);
    // A session user (JWT) needs X-Brain-Id for trace events.
    const jwt = await ws.jwt(['member']);
    expect((await app.get(`/v1/traces/${traceId}/events`, jwt)).status).toBe(400);
    const withBrain = await readSse(url, {
      headers: { authorization: `Bearer ${jwt}`, 'x-brain-id': ws.brainId },
      until: (ev) => ev.length >= 1,
    });
    expect(withBrain.status).toBe(200);
  });
});
