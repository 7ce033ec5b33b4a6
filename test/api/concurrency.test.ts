import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { holding, releaseHold, tryHold, updateHeld, type HoldDoc } from '../../src/kernel/store/claims.js';
import type { DocumentDoc } from '../../src/knowledge/index.js';
import { buildWorkspace, startTestApp, useTestApp } from '../support/app.js';

/**
 * The one concurrency mechanism (claims by unique insert, src/kernel/store/claims.ts) under concurrent
 * writers, on the store the suite runs on (FerretDB here; the same tests run on MongoDB).
 */
const app = useTestApp();

describe('claims by unique insert', () => {
  it('40 concurrent appends to one trace: sequence 1..40 without gaps or duplicates, counters exact', async () => {
    const ws = await buildWorkspace(app);
    const scope = await app.services.auth.authenticate(ws.key);
    const traceId = randomUUID();
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        app.services.traces.append(scope, traceId, {
          content: { type: 'human', content: `m${i}` },
          sourceType: 'user',
          sourceId: null,
          cost: { totalCostUsd: 0.25, totalTokens: 10, inputTokens: 6, outputTokens: 4 },
        }),
      ),
    );
    const engrams = await app.services.traces.messages(scope, traceId);
    expect(engrams.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(new Set(engrams.map((e) => e.content.content)).size).toBe(40);
    const trace = await app.services.traces.get(scope, traceId);
    expect(trace.messageCount).toBe(40);
    expect(trace.cost).toMatchObject({ totalTokens: 400, inputTokens: 240, outputTokens: 160, totalCostUsd: 10 });
    // A repeated append with the same id is the same engram (a retried activity writes once).
    const id = randomUUID();
    const [a, b] = await Promise.all(
      [0, 1].map(() =>
        app.services.traces.append(scope, traceId, {
          id,
          content: { type: 'neuron', content: 'once' },
          sourceType: 'neuron',
          sourceId: null,
        }),
      ),
    );
    expect(a._id).toBe(b._id);
    expect((await app.services.traces.messages(scope, traceId)).filter((e) => e._id === id)).toHaveLength(1);
    expect((await app.services.traces.get(scope, traceId)).messageCount).toBe(41);
  });

  it('15 concurrent neuron edits get distinct consecutive versions, every one recorded, the head the newest', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (await app.post<{ id: string }>('/v1/neurons', ws.key, { name: 'contended', brain_id: ws.brainId }))
      .body;
    const results = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        app.put<{ version: number }>(`/v1/neurons/${neuron.id}`, ws.key, { description: `edit ${i}` }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.map((r) => r.body.version).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 15 }, (_, i) => i + 2),
    );
    const versions = (
      await app.get<{ versions: { version: number }[] }>(`/v1/neurons/${neuron.id}/versions`, ws.key)
    ).body.versions.map((v) => v.version);
    expect([...versions].sort((x, y) => x - y)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    const head = (await app.get<{ version: number; description: string }>(`/v1/neurons/${neuron.id}`, ws.key)).body;
    expect(head.version).toBe(16);
    const v16 = (await app.get<{ description: string }>(`/v1/neurons/${neuron.id}?version=16`, ws.key)).body;
    expect(head.description).toBe(v16.description);
  });

  it('12 concurrent skill edits: consecutive versions, and the head shows the newest one', async () => {
    const ws = await buildWorkspace(app);
    const skill = (
      await app.post<{ id: string }>('/v1/skills', ws.key, {
        body_md: '# v1',
        path_name: 'contended skill',
        brain_id: ws.brainId,
      })
    ).body;
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        app.put<{ latest_version: number; body_md: string }>(`/v1/skills/${skill.id}`, ws.key, {
          body_md: `# edit ${i}`,
        }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.map((r) => r.body.latest_version).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 12 }, (_, i) => i + 2),
    );
    const newest = results.find((r) => r.body.latest_version === 13)!.body;
    const head = (await app.get<{ latest_version: number; body_md: string }>(`/v1/skills/${skill.id}`, ws.key)).body;
    expect(head).toMatchObject({ latest_version: 13, body_md: newest.body_md });
  });

  it('a terminal transition racing others: exactly one terminal state wins and stays, and the stream agrees', async () => {
    const ws = await buildWorkspace(app);
    const scope = await app.services.auth.authenticate(ws.key);
    for (let round = 0; round < 10; round++) {
      const id = randomUUID();
      await app.services.jobs.create(scope, { id, kind: 'neuron' });
      const outcomes = await Promise.all([
        app.services.jobs.transition(ws.workspaceId, id, { status: 'running', progress: 10 }),
        app.services.jobs.finalize(ws.workspaceId, id, { status: 'completed', result: { ok: true } }),
        app.services.jobs.transition(ws.workspaceId, id, { progress: 50, currentStep: 'busy' }),
        app.services.jobs.finalize(ws.workspaceId, id, { status: 'failed', failedReason: 'cancelled: race' }),
        app.services.jobs.transition(ws.workspaceId, id, { status: 'waiting' }),
      ]);
      expect([outcomes[1], outcomes[3]].filter(Boolean)).toHaveLength(1);
      const job = await app.services.jobs.get(scope, id);
      expect(job.status).toBe(outcomes[1] ? 'completed' : 'failed');
      // Later writers change nothing.
      expect(await app.services.jobs.transition(ws.workspaceId, id, { status: 'running' })).toBe(false);
      expect((await app.services.jobs.get(scope, id)).status).toBe(job.status);
      const entries = (await app.services.streams.range(app.services.jobs.streamKey(id))).map((e) => e.data.type);
      expect(entries).toEqual([job.status === 'completed' ? 'complete' : 'error']);
    }
  });

  it('a job whose end is claimed (and its stream ended) but whose record is not settled yet reads as ended', async () => {
    const ws = await buildWorkspace(app);
    const scope = await app.services.auth.authenticate(ws.key);
    const id = randomUUID();
    await app.services.jobs.create(scope, { id, kind: 'neuron' });
    await app.services.jobs.transition(ws.workspaceId, id, {
      status: 'running',
      progress: 40,
      currentStep: 'model turn 1',
    });
    // The moment between the claim (from which the stream's `complete` entry is written) and the record's settling.
    await app.deps.repos.jobs.claimTerminal(ws.workspaceId, id, {
      status: 'completed',
      progress: 100,
      currentStep: 'completed',
      result: { text: 'done' },
      finishedAt: new Date(),
      updatedAt: new Date(),
    });
    expect((await app.services.jobs.get(scope, id)).status).toBe('running'); // the record itself lags
    // Until the stream's terminal entry is written, no reader can have seen the end: the status
    // reads the claim only from then on (one Redis read per poll of a running job, no store read).
    expect((await app.get<{ status: string }>(`/v1/jobs/${id}/status`, ws.key)).body.status).toBe('running');
    expect(await app.services.jobs.endedAs(id)).toBeNull();
    await app.services.jobs.emit(id, { type: 'complete' }); // written from the claim, as finalize does
    expect(await app.services.jobs.endedAs(id)).toBe('completed');
    for (const path of [`/v1/jobs/${id}`, `/v1/jobs/${id}/status`]) {
      const r = await app.get<{ status: string; progress: number; result: unknown }>(path, ws.key);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'completed', progress: 100, result: { text: 'done' } });
    }
  });

  it("a run's save after its job was cancelled stores nothing; a save retried after its job completed answers the reply", async () => {
    const ws = await buildWorkspace(app);
    const scope = await app.services.auth.authenticate(ws.key);
    const finishOf = (jobId: string, engramId: string) =>
      app.services.runs.finish({
        input: {
          jobId,
          scope: { workspaceId: ws.workspaceId, userId: null, apiKeyId: null, roles: ['admin'], credential: 'api_key' },
          neuronId: randomUUID(),
          neuronVersion: 1,
          traceId: randomUUID(),
          traceType: 'thread',
          message: 'hello',
          userEngramId: null,
          depth: 1,
          maxTurns: 8,
          pathwayContext: { pathwayId: 'inline', nodeIndex: 1 },
        },
        engramId,
        model: 'openai/gpt-4o-mini',
        turns: 1,
        accepted: [1],
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, costUsd: 0 },
        neuronType: null,
      });
    const cancelled = randomUUID();
    await app.services.jobs.create(scope, { id: cancelled, kind: 'neuron' });
    await app.services.jobs.finalize(ws.workspaceId, cancelled, {
      status: 'failed',
      failedReason: 'cancelled: by user',
    });
    const engramId = randomUUID();
    expect(await finishOf(cancelled, engramId)).toMatchObject({ cancelled: true });
    expect(await app.deps.repos.traces.findEngram(ws.workspaceId, engramId)).toBeNull();
    // The same save twice: the second finds the job completed by the first and answers its reply.
    const done = randomUUID();
    await app.services.jobs.create(scope, { id: done, kind: 'neuron' });
    const again = randomUUID();
    const first = await finishOf(done, again);
    expect(first.cancelled).toBeUndefined();
    const second = await finishOf(done, again);
    expect(second).toMatchObject({ engramId: again });
    expect(second.cancelled).toBeFalsy();
    expect((await app.services.jobs.get(scope, done)).status).toBe('completed');
  });

  it('writers of different fields of one row lose nothing: 24 concurrent held updates all show, a version-guarded head write never goes back', async () => {
    const ws = await buildWorkspace(app);
    const created = (
      await app.post<{ artifact: { id: string } }>(
        '/v1/artifacts',
        ws.key,
        { title: 'Held', content: 'one', skip_embedding: true },
        ws.brainHeaders,
      )
    ).body;
    const documents = app.deps.db.collection<DocumentDoc>('documents');
    const holds = app.deps.db.collection<HoldDoc>('knowledge_holds');
    const id = created.artifact.id;
    // Twelve writers of their own field, twelve head writers racing on `version` (each only if still older).
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        i % 2
          ? updateHeld(holds, documents, { _id: id, workspaceId: ws.workspaceId }, { [`metadata_probe_${i}`]: i })
          : updateHeld(
              holds,
              documents,
              { _id: id, workspaceId: ws.workspaceId, version: { $lt: 100 + i } },
              { version: 100 + i },
            ),
      ),
    );
    const row = (await app.deps.db.collection('documents').findOne({ _id: id as never }))!;
    for (let i = 1; i < 24; i += 2) expect(row[`metadata_probe_${i}`]).toBe(i);
    expect(row.version).toBe(122);
    expect(results.filter((r, i) => i % 2).every(Boolean)).toBe(true);
    // No hold is left behind.
    expect(await holds.countDocuments({ _id: id })).toBe(0);
    const api = (await app.get<{ latest_version: number }>(`/v1/artifacts/${id}`, ws.key)).body;
    expect(api.latest_version).toBe(122);
  });

  it('a hold is exclusive while live and taken over once its lease ran out; only its owner gives it back', async () => {
    const holds = app.deps.db.collection<HoldDoc>('knowledge_holds');
    const key = randomUUID();
    expect(await tryHold(holds, key, 'a', 60_000)).toBe(true);
    expect(await tryHold(holds, key, 'b', 60_000)).toBe(false);
    await releaseHold(holds, key, 'b');
    expect(await tryHold(holds, key, 'b', 60_000)).toBe(false);
    // A holder that died: its lease runs out, the next writer takes the hold.
    await holds.updateOne({ _id: key }, { $set: { expiresAt: new Date(Date.now() - 1) } });
    expect(await tryHold(holds, key, 'b', 60_000)).toBe(true);
    await releaseHold(holds, key, 'a');
    expect((await holds.findOne({ _id: key }))?.owner).toBe('b');
    await releaseHold(holds, key, 'b');
    expect(await holds.findOne({ _id: key })).toBeNull();
    // holding() serializes: 10 read-then-write increments through one hold count to 10.
    const counter = app.deps.db.collection<{ _id: string; n: number }>('test_hold_counter');
    await counter.insertOne({ _id: key, n: 0 });
    await Promise.all(
      Array.from({ length: 10 }, () =>
        holding(
          holds,
          `counter:${key}`,
          async () => {
            const cur = (await counter.findOne({ _id: key }))!;
            await counter.updateOne({ _id: key }, { $set: { n: cur.n + 1 } });
          },
          { leaseMs: 10_000, waitMs: 20_000, busy: () => new Error('busy') },
        ),
      ),
    );
    expect((await counter.findOne({ _id: key }))!.n).toBe(10);
  });

  it('a store that cannot be reached answers a retryable 503 with the error body, never a 500', async () => {
    const broken = await startTestApp();
    try {
      const ws = await buildWorkspace(broken);
      broken.deps.redis.disconnect();
      // The breaker notices within a probe interval; from then on requests are refused before they write.
      for (let i = 0; i < 100 && !broken.deps.breakers.isOpen('redis'); i++)
        await new Promise((r) => setTimeout(r, 50));
      const res = await broken.post(`/v1/traces/${randomUUID()}/messages`, ws.key, { content: 'hi' });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(res.headers.get('retry-after')).toBeTruthy();
    } finally {
      await broken.close();
    }
  });
});
