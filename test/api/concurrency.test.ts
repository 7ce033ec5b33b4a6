import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildWorkspace, startTestApp, useTestApp } from '../support/app.js';

/**
 * The one concurrency mechanism (claims by unique insert, src/db/claims.ts) under concurrent
 * writers, on the store the suite runs on (FerretDB here; the same tests run on MongoDB).
 */
const app = useTestApp();

describe('claims by unique insert', () => {
  it('40 concurrent appends to one trace: sequence 1..40 without gaps or duplicates, counters exact', async () => {
    const ws = await buildWorkspace(app);
    const scope = await app.services.auth.authenticate(ws.key);
    const traceId = randomUUID();
    await Promise.all(Array.from({ length: 40 }, (_, i) => app.services.traces.append(scope, traceId, {
      content: { type: 'human', content: `m${i}` }, sourceType: 'user', sourceId: null,
      cost: { totalCostUsd: 0.25, totalTokens: 10, inputTokens: 6, outputTokens: 4 },
    })));
    const engrams = await app.services.traces.messages(scope, traceId);
    expect(engrams.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(new Set(engrams.map((e) => e.content.content)).size).toBe(40);
    const trace = await app.services.traces.get(scope, traceId);
    expect(trace.messageCount).toBe(40);
    expect(trace.cost).toMatchObject({ totalTokens: 400, inputTokens: 240, outputTokens: 160, totalCostUsd: 10 });
    // A repeated append with the same id is the same engram (a retried activity writes once).
    const id = randomUUID();
    const [a, b] = await Promise.all([0, 1].map(() => app.services.traces.append(scope, traceId, { id, content: { type: 'neuron', content: 'once' }, sourceType: 'neuron', sourceId: null })));
    expect(a._id).toBe(b._id);
    expect((await app.services.traces.messages(scope, traceId)).filter((e) => e._id === id)).toHaveLength(1);
    expect((await app.services.traces.get(scope, traceId)).messageCount).toBe(41);
  });

  it('15 concurrent neuron edits get distinct consecutive versions, every one recorded, the head the newest', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (await app.post<{ id: string }>('/v1/neurons', ws.key, { name: 'contended', brain_id: ws.brainId })).body;
    const results = await Promise.all(Array.from({ length: 15 }, (_, i) => app.put<{ version: number }>(`/v1/neurons/${neuron.id}`, ws.key, { description: `edit ${i}` })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.map((r) => r.body.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 15 }, (_, i) => i + 2));
    const versions = (await app.get<{ versions: { version: number }[] }>(`/v1/neurons/${neuron.id}/versions`, ws.key)).body.versions.map((v) => v.version);
    expect([...versions].sort((x, y) => x - y)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    const head = (await app.get<{ version: number; description: string }>(`/v1/neurons/${neuron.id}`, ws.key)).body;
    expect(head.version).toBe(16);
    const v16 = (await app.get<{ description: string }>(`/v1/neurons/${neuron.id}?version=16`, ws.key)).body;
    expect(head.description).toBe(v16.description);
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

  it('a store that cannot be reached answers a retryable 503 with the error body, never a 500', async () => {
    const broken = await startTestApp();
    try {
      const ws = await buildWorkspace(broken);
      broken.deps.redis.disconnect();
      const res = await broken.post(`/v1/traces/${randomUUID()}/messages`, ws.key, { content: 'hi' });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(res.headers.get('retry-after')).toBeTruthy();
    } finally {
      await broken.close();
    }
  });
});
