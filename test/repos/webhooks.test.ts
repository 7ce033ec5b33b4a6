/** The webhook repository (src/webhooks/store.mongo.ts): endpoints scoped to their workspace, deliveries claimed once per id, attempts, secrets. */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { WebhookDeliveryDoc, WebhookEndpointDoc, WebhookRepo } from '../../src/webhooks/index.js';
import { exposedCollections, openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function endpoint(workspaceId: string, over: Partial<WebhookEndpointDoc> = {}): WebhookEndpointDoc {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    url: 'https://hooks.example.com/x',
    events: ['job.completed'],
    description: null,
    enabled: true,
    secrets: [{ sealed: 'v1.k1.sealed', keyId: 'k1', createdAt: now, expiresAt: null }],
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    ...over,
  };
}

function delivery(workspaceId: string, endpointId: string, over: Partial<WebhookDeliveryDoc> = {}): WebhookDeliveryDoc {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    endpointId,
    event: 'job.completed',
    eventKey: `job.completed:${randomUUID()}:completed`,
    body: '{"type":"job.completed","timestamp":"2026-01-01T00:00:00.000Z","data":{"$weird.key":1}}',
    status: 'pending',
    replayOf: null,
    attempts: [],
    failedReason: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    ...over,
  };
}

describe.each(h.backends)('webhook repository (%s)', (backend) => {
  const repo: WebhookRepo = h.repos(backend).webhooks;
  const ws = randomUUID();

  it('exposes no driver collection', () => {
    expect(exposedCollections(repo)).toEqual([]);
  });

  it('creates, reads, pages, updates and removes endpoints only within their workspace; never shows sealed secrets', async () => {
    const a = endpoint(ws);
    const b = endpoint(ws, { enabled: false, createdAt: new Date(Date.now() + 1000) });
    const created = await repo.createEndpoint(a);
    expect(created).not.toHaveProperty('secrets');
    expect(created.secretExpiries).toEqual([null]);
    await repo.createEndpoint(b);
    expect(await repo.getEndpoint(ws, a._id)).toMatchObject({ url: a.url, enabled: true });
    expect(await repo.getEndpoint(randomUUID(), a._id)).toBeNull();
    expect((await repo.endpointForSigning(ws, a._id))?.secrets[0].sealed).toBe('v1.k1.sealed');
    expect((await repo.pageEndpoints(ws, { limit: 10 })).items.map((e) => e._id)).toEqual([a._id, b._id]);
    expect((await repo.enabledEndpoints(ws)).map((e) => e._id)).toEqual([a._id]);

    expect(await repo.updateEndpoint(randomUUID(), a._id, { enabled: false, updatedAt: new Date() })).toBeNull();
    const up = await repo.updateEndpoint(ws, a._id, { events: ['job.failed', 'job.waiting'], updatedAt: new Date() });
    expect(up?.events).toEqual(['job.failed', 'job.waiting']);

    const later = new Date(Date.now() + 86_400_000);
    const rotated = await repo.setSecrets(
      ws,
      a._id,
      [
        { sealed: 'v1.k1.new', keyId: 'k1', createdAt: new Date(), expiresAt: null },
        { sealed: 'v1.k1.sealed', keyId: 'k1', createdAt: a.createdAt, expiresAt: later },
      ],
      new Date(),
    );
    expect(rotated?.secretExpiries).toEqual([null, later]);
    expect(await repo.setSecrets(randomUUID(), a._id, [], new Date())).toBeNull();

    expect(await repo.removeEndpoint(randomUUID(), b._id)).toBe(false);
    expect(await repo.removeEndpoint(ws, b._id)).toBe(true);
    expect(await repo.getEndpoint(ws, b._id)).toBeNull();
  });

  it('claims a delivery once per id, records each attempt number once, finishes a pending delivery once', async () => {
    const e = await repo.createEndpoint(endpoint(ws));
    const d = delivery(ws, e._id);
    expect(await repo.createDelivery(d)).toBe(true);
    expect(await repo.createDelivery({ ...d, body: '{}' })).toBe(false);
    expect(await repo.getDelivery(randomUUID(), d._id)).toBeNull();
    expect((await repo.getDelivery(ws, d._id))?.body).toBe(d.body);

    const at = new Date();
    await repo.recordAttempt(ws, d._id, { attempt: 1, at, statusCode: 500, error: null, durationMs: 3 });
    await repo.recordAttempt(ws, d._id, { attempt: 1, at, statusCode: 500, error: null, durationMs: 3 });
    await repo.recordAttempt(ws, d._id, { attempt: 2, at, statusCode: null, error: 'ECONNRESET', durationMs: 9 });
    await repo.recordAttempt(randomUUID(), d._id, { attempt: 3, at, statusCode: 200, error: null, durationMs: 1 });
    const got = await repo.getDelivery(ws, d._id);
    expect(got?.attempts.map((a) => [a.attempt, a.statusCode, a.error])).toEqual([
      [1, 500, null],
      [2, null, 'ECONNRESET'],
    ]);

    await repo.finishDelivery(ws, d._id, 'delivered', null);
    await repo.finishDelivery(ws, d._id, 'failed', 'late');
    expect(await repo.getDelivery(ws, d._id)).toMatchObject({ status: 'delivered', failedReason: null });
  });

  it('pages deliveries newest first per endpoint; removing the endpoint removes its deliveries', async () => {
    const e = await repo.createEndpoint(endpoint(ws));
    const other = await repo.createEndpoint(endpoint(ws));
    const t = Date.now();
    const ds = [0, 1, 2].map((i) => delivery(ws, e._id, { createdAt: new Date(t + i * 1000) }));
    for (const d of ds) await repo.createDelivery(d);
    await repo.createDelivery(delivery(ws, other._id));
    const p1 = await repo.pageDeliveries(ws, e._id, { limit: 2 });
    expect(p1.items.map((d) => d._id)).toEqual([ds[2]._id, ds[1]._id]);
    expect(p1.hasMore).toBe(true);
    const p2 = await repo.pageDeliveries(ws, e._id, { limit: 2, cursor: p1.nextCursor! });
    expect(p2.items.map((d) => d._id)).toEqual([ds[0]._id]);
    expect((await repo.pageDeliveries(randomUUID(), e._id, { limit: 10 })).items).toEqual([]);
    await repo.removeEndpoint(ws, e._id);
    expect((await repo.pageDeliveries(ws, e._id, { limit: 10 })).items).toEqual([]);
    expect((await repo.pageDeliveries(ws, other._id, { limit: 10 })).items).toHaveLength(1);
  });

  it('re-seals secrets not under the current key', async () => {
    const w2 = randomUUID();
    const e = endpoint(w2, {
      secrets: [
        { sealed: 'v1.old.a', keyId: 'old', createdAt: new Date(), expiresAt: null },
        { sealed: 'v1.new.b', keyId: 'new', createdAt: new Date(), expiresAt: new Date(Date.now() + 1000) },
      ],
    });
    await repo.createEndpoint(e);
    expect(await repo.resealAll('new', (s) => s.replace('.old.', '.new.'))).toBeGreaterThanOrEqual(1);
    expect((await repo.endpointForSigning(w2, e._id))?.secrets.map((s) => [s.sealed, s.keyId])).toEqual([
      ['v1.new.a', 'new'],
      ['v1.new.b', 'new'],
    ]);
  });
});
