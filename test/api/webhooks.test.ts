/**
 * Signed webhooks (docs/webhooks.md) end to end: a receiver on loopback verifies every delivery with
 * the `standardwebhooks` library; failed attempts are retried by the delivery workflow and recorded;
 * rotation signs with both secrets; replay makes a new delivery; only admins of the workspace see any of it.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

const { app } = usePlatform({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'], WEBHOOK_RETRY_INITIAL_MS: 100 });

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}
interface Delivery {
  id: string;
  event: string;
  status: string;
  replay_of: string | null;
  failed_reason: string | null;
  payload: { type: string; timestamp: string; data: Record<string, unknown> };
  attempts: { attempt: number; at: string; status_code: number | null; error: string | null; duration_ms: number }[];
}

/** A loopback receiver: answers each path with the statuses queued for it (then 200), keeping every request. */
let receiver: Server;
let base = '';
const received: Received[] = [];
const queued = new Map<string, number[]>();
beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const status = queued.get(path)?.shift() ?? 200;
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

const headersOf = (r: Received) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});
/** Whether `secret` verifies the request (the receiver's side, with the reference library). */
const verifies = (secret: string, r: Received): boolean => {
  try {
    new Webhook(secret).verify(r.body, headersOf(r));
    return true;
  } catch {
    return false;
  }
};

async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function setup() {
  const ws = await buildWorkspace(app);
  const admin = await ws.jwt(['workspace_admin']);
  const neuron = await app.post<{ id: string }>('/v1/neurons', ws.key, {
    name: 'hooked',
    brain_id: ws.brainId,
    neuron_config: { model: 'local/echo' },
  });
  expect(neuron.status, neuron.text).toBe(201);
  const run = async () => {
    const inv = await app.post<{ job_id: string }>(`/v1/neurons/${neuron.body.id}/invoke`, ws.key, { message: 'hi' });
    expect(inv.status, inv.text).toBe(202);
    const job = await settleJob(app, ws.key, inv.body.job_id);
    expect(job.status).toBe('completed');
    return inv.body.job_id;
  };
  return { ws, admin, run };
}

const deliveriesOf = async (admin: string, endpointId: string) =>
  (await app.get<{ deliveries: Delivery[] }>(`/v1/webhook-endpoints/${endpointId}/deliveries`, admin)).body.deliveries;

describe('signed webhooks', () => {
  it('a job.completed delivery answered 500 twice is retried, recorded attempt by attempt, and verifies', async () => {
    const { admin, run } = await setup();
    const path = '/retried';
    queued.set(path, [500, 500]);
    const created = await app.post<{ id: string; secret: string; events: string[] }>('/v1/webhook-endpoints', admin, {
      url: base + path,
      events: ['job.completed'],
      description: 'retries',
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const { id, secret } = created.body;
    // The secret is shown once: no later read has it.
    const read = await app.get(`/v1/webhook-endpoints/${id}`, admin);
    expect(read.body).toMatchObject({ id, url: base + path, events: ['job.completed'], enabled: true });
    expect(read.text).not.toContain(secret.slice(6));
    expect((await app.get('/v1/webhook-endpoints', admin)).text).not.toContain('whsec_');
    const stored = await app.deps.db.collection('webhook_endpoints').findOne({ _id: id as never });
    expect(JSON.stringify(stored)).not.toContain(secret.slice(6));

    const jobId = await run();
    const [delivery] = await until(
      'the delivery',
      () => deliveriesOf(admin, id),
      (ds) => ds[0]?.status === 'delivered',
    );
    expect(delivery).toMatchObject({ event: 'job.completed', replay_of: null, failed_reason: null });
    expect(delivery.payload).toMatchObject({ type: 'job.completed', data: { job_id: jobId, status: 'completed' } });
    expect(delivery.attempts.map((a) => a.status_code)).toEqual([500, 500, 200]);
    expect(delivery.attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    for (const a of delivery.attempts) expect(a.duration_ms).toBeGreaterThanOrEqual(0);

    const got = received.filter((r) => r.path === path);
    expect(got.map((r) => r.status)).toEqual([500, 500, 200]);
    // Every attempt is signed (with a fresh timestamp), carries the delivery id and verifies.
    for (const r of got) {
      expect(verifies(secret, r)).toBe(true);
      expect(r.headers['webhook-id']).toBe(delivery.id);
      expect(JSON.parse(r.body)).toEqual(delivery.payload);
    }
    expect(verifies(`whsec_${Buffer.from('not the secret').toString('base64')}`, got[0])).toBe(false);
    // One transition, one delivery: the job's events are sent once.
    await new Promise((r) => setTimeout(r, 500));
    expect(await deliveriesOf(admin, id)).toHaveLength(1);
  });

  it('rotate-secret: during the overlap both the old and the new secret verify; replay makes a new delivery', async () => {
    const { admin, run } = await setup();
    const path = '/rotated';
    const created = await app.post<{ id: string; secret: string }>('/v1/webhook-endpoints', admin, {
      url: base + path,
      events: ['job.completed', 'job.failed'],
    });
    const { id, secret: oldSecret } = created.body;
    const rotated = await app.post<{ secret: string; previous_secret_expires_at: string }>(
      `/v1/webhook-endpoints/${id}/rotate-secret`,
      admin,
    );
    expect(rotated.status, rotated.text).toBe(200);
    const newSecret = rotated.body.secret;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    const overlap = Date.parse(rotated.body.previous_secret_expires_at) - Date.now();
    expect(overlap).toBeGreaterThan(23 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);
    expect((await app.get(`/v1/webhook-endpoints/${id}`, admin)).text).not.toContain(newSecret.slice(6));

    await run();
    const [delivery] = await until(
      'the delivery',
      () => deliveriesOf(admin, id),
      (ds) => ds[0]?.status === 'delivered',
    );
    const got = received.filter((r) => r.path === path);
    expect(got).toHaveLength(1);
    expect(String(got[0].headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(oldSecret, got[0])).toBe(true);
    expect(verifies(newSecret, got[0])).toBe(true);

    const replay = await app.post<Delivery>(`/v1/webhook-endpoints/${id}/deliveries/${delivery.id}/replay`, admin);
    expect(replay.status, replay.text).toBe(201);
    expect(replay.body).toMatchObject({ replay_of: delivery.id, status: 'pending', payload: delivery.payload });
    expect(replay.body.id).not.toBe(delivery.id);
    const all = await until(
      'the replay',
      () => deliveriesOf(admin, id),
      (ds) => ds.length === 2 && ds.every((d) => d.status === 'delivered'),
    );
    expect(all.map((d) => d.id).sort()).toEqual([delivery.id, replay.body.id].sort());
    const again = received.filter((r) => r.path === path);
    expect(again).toHaveLength(2);
    expect(again[1].headers['webhook-id']).toBe(replay.body.id);
    expect(verifies(newSecret, again[1])).toBe(true);
    expect(again[1].body).toBe(again[0].body);
  });

  it('a 4xx is not retried; intervention events reach the endpoints subscribed to them; disabled endpoints get nothing', async () => {
    const { ws, admin, run } = await setup();
    const refused = (
      await app.post<{ id: string }>('/v1/webhook-endpoints', admin, {
        url: `${base}/refuses`,
        events: ['intervention.created', 'intervention.answered'],
      })
    ).body.id;
    queued.set('/refuses', [400, 400, 400]);
    const quiet = (
      await app.post<{ id: string }>('/v1/webhook-endpoints', admin, {
        url: `${base}/quiet`,
        events: ['job.completed', 'intervention.created'],
        enabled: false,
      })
    ).body.id;
    const jobId = await run();
    const scope = await app.services.auth.authenticate(ws.key);
    const intervention = await app.services.interventions.create(scope, {
      id: randomUUID(),
      jobId,
      traceId: null,
      pathwayId: null,
      brainId: ws.brainId,
      nodeIndex: 0,
      kind: 'approval',
      title: 'Ship it?',
      prompt: 'Approve the release',
      options: ['approve', 'reject'],
    });
    const [failed] = await until(
      'the refused delivery',
      () => deliveriesOf(admin, refused),
      (ds) => ds[0]?.status === 'failed',
    );
    expect(failed.event).toBe('intervention.created');
    expect(failed.payload.data).toMatchObject({ intervention_id: intervention._id, job_id: jobId, status: 'pending' });
    expect(failed.attempts.map((a) => a.status_code)).toEqual([400]);
    expect(failed.failed_reason).toMatch(/400/);

    queued.set('/refuses', []);
    await app.services.interventions.recordAnswer(
      ws.workspaceId,
      { interventionId: intervention._id, action: 'approve', by: 'someone' },
      'approval',
    );
    const ds = await until(
      'the answered delivery',
      () => deliveriesOf(admin, refused),
      (d) => d.some((x) => x.event === 'intervention.answered' && x.status === 'delivered'),
    );
    expect(ds.find((x) => x.event === 'intervention.answered')!.payload.data).toMatchObject({
      intervention_id: intervention._id,
      status: 'approved',
      action: 'approve',
    });
    expect(await deliveriesOf(admin, quiet)).toEqual([]);
    expect(received.some((r) => r.path === '/quiet')).toBe(false);
  });

  it('admins only, each workspace its own: a member gets 403, another workspace 404; url and events are checked', async () => {
    const a = await buildWorkspace(app);
    const b = await buildWorkspace(app);
    const adminA = await a.jwt(['workspace_admin']);
    const adminB = await b.jwt(['workspace_admin']);
    const member = await a.jwt([]);
    const body = { url: `${base}/scoped`, events: ['job.failed'] };
    expect((await app.post('/v1/webhook-endpoints', member, body)).status).toBe(403);
    expect((await app.get('/v1/webhook-endpoints', member)).status).toBe(403);
    const { id } = (await app.post<{ id: string }>('/v1/webhook-endpoints', adminA, body)).body;
    expect((await app.get(`/v1/webhook-endpoints/${id}`, member)).status).toBe(403);
    expect((await app.get(`/v1/webhook-endpoints/${id}`, adminB)).status).toBe(404);
    expect((await app.patch(`/v1/webhook-endpoints/${id}`, adminB, { enabled: false })).status).toBe(404);
    expect((await app.post(`/v1/webhook-endpoints/${id}/rotate-secret`, adminB)).status).toBe(404);
    expect((await app.get(`/v1/webhook-endpoints/${id}/deliveries`, adminB)).status).toBe(404);
    expect((await app.del(`/v1/webhook-endpoints/${id}`, adminB)).status).toBe(404);
    expect(
      (await app.get<{ webhook_endpoints: unknown[] }>('/v1/webhook-endpoints', adminB)).body.webhook_endpoints,
    ).toEqual([]);

    expect((await app.post('/v1/webhook-endpoints', adminA, { ...body, url: 'ftp://x.example/' })).status).toBe(400);
    expect((await app.post('/v1/webhook-endpoints', adminA, { ...body, events: ['job.started'] })).status).toBe(400);
    expect((await app.post('/v1/webhook-endpoints', adminA, { ...body, events: [] })).status).toBe(400);
    const patched = await app.patch(`/v1/webhook-endpoints/${id}`, adminA, { events: ['job.waiting'], enabled: false });
    expect(patched.body).toMatchObject({ events: ['job.waiting'], enabled: false });
    expect((await app.del(`/v1/webhook-endpoints/${id}`, adminA)).status).toBe(200);
    expect((await app.get(`/v1/webhook-endpoints/${id}`, adminA)).status).toBe(404);
  });
});
