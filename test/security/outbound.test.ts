/**
 * Threat class: a tenant makes the platform call an internal address (server-side request forgery).
 * Actor: a workspace admin (or any member who may save a URL) of any workspace. Never reached:
 * cloud metadata (169.254.169.254, fd00:ec2::254), loopback, private and unique-local ranges, in any
 * spelling. Every URL a tenant saves for the platform to call later is checked by the one outbound
 * guard (src/net/guard.ts) when it is SAVED (400 naming the field, nothing stored) and again every
 * time it is USED. The platform under test allows 127.0.0.1 by host (OUTBOUND_ALLOW_HOSTS), as an
 * operator with a self-hosted tool server would; `localhost` and every other loopback form are not.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace, type TestResponse } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

const { app } = usePlatform({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'], WEBHOOK_RETRY_INITIAL_MS: 100 });
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

/** A loopback receiver that records every request: an attack that got through would show here. */
let receiver: Server;
let port = 0;
const received: string[] = [];
beforeAll(async () => {
  receiver = createServer((req, res) => {
    received.push(req.url ?? '/');
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  port = (receiver.address() as AddressInfo).port;
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

/**
 * Internal addresses as an attacker spells them: metadata, unique-local, private, a name that
 * resolves to loopback, and the IPv6 forms that embed an internal IPv4 ([::a.b.c.d] passed the
 * guard before), plus numeric IPv4 forms of the metadata address.
 */
const ATTACKS = [
  'http://169.254.169.254/latest/meta-data/',
  'http://[fd00:ec2::254]/latest/meta-data/',
  'http://10.0.0.5/',
  'http://localhost:8080/',
  'http://[::169.254.169.254]/latest/meta-data/',
  'http://[::a9fe:a9fe]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[2002:a9fe:a9fe::1]/',
  'http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/', // Teredo, client 10.0.0.1
  'http://[fe80::5efe:a9fe:a9fe]/',
  'http://2852039166/', // 169.254.169.254 in decimal
  'http://0251.0376.0251.0376/', // in octal
  'http://0xa9.0xfe.0xa9.0xfe./', // in hex, with a trailing dot
];
const https = (u: string) => u.replace(/^http:/, 'https:');

function expectRefused(r: TestResponse, field: string, attack: string) {
  expect(r.status, `${attack}: ${r.text}`).toBe(400);
  expect(r.body.code).toBe('VALIDATION_ERROR');
  expect(String(r.body.message), attack).toMatch(
    new RegExp(`^${field.replace(/\./g, '\\.')}: refused by the outbound guard`),
  );
}

const graphWith = (url: string) => ({
  nodes: [
    { id: 's', type: 'start', data: {} },
    { id: 'h', type: 'http', data: { url } },
    { id: 'o', type: 'output', data: {} },
  ],
  edges: [
    { id: 'e1', source: 's', target: 'h' },
    { id: 'e2', source: 'h', target: 'o' },
  ],
});

/** Every route that saves a URL for later, as the attacker sends it; `stored` reads what the workspace has. */
const SAVES: {
  name: string;
  field: string;
  send: (ws: Ws, url: string) => Promise<TestResponse>;
  stored: (ws: Ws) => Promise<unknown>;
}[] = [
  {
    name: 'POST /v1/webhook-endpoints',
    field: 'url',
    send: (ws, url) => app.post('/v1/webhook-endpoints', ws.key, { url, events: ['job.completed'] }),
    stored: async (ws) => (await app.get('/v1/webhook-endpoints', ws.key)).body.webhook_endpoints,
  },
  {
    name: 'PUT /v1/integrations/:id (token_endpoint)',
    field: 'token_endpoint',
    send: (ws, url) =>
      app.put('/v1/integrations/idp', ws.key, {
        authorization_endpoint: `http://127.0.0.1:${port}/auth`,
        token_endpoint: https(url),
        client_id: 'c',
        client_secret: 's',
      }),
    stored: async (ws) => (await app.get('/v1/integrations', ws.key)).body.integrations,
  },
  {
    name: 'PUT /v1/integrations/:id (authorization_endpoint)',
    field: 'authorization_endpoint',
    send: (ws, url) =>
      app.put('/v1/integrations/idp', ws.key, {
        authorization_endpoint: https(url),
        token_endpoint: `http://127.0.0.1:${port}/token`,
        client_id: 'c',
        client_secret: 's',
      }),
    stored: async (ws) => (await app.get('/v1/integrations', ws.key)).body.integrations,
  },
  {
    name: 'PUT /v1/integrations/:id (mcp_server_url)',
    field: 'mcp_server_url',
    send: (ws, url) =>
      app.put('/v1/integrations/idp', ws.key, {
        authorization_endpoint: `http://127.0.0.1:${port}/auth`,
        token_endpoint: `http://127.0.0.1:${port}/token`,
        client_id: 'c',
        client_secret: 's',
        mcp_server_url: url,
      }),
    stored: async (ws) => (await app.get('/v1/integrations', ws.key)).body.integrations,
  },
  {
    name: 'POST /v1/reflexes (an MCP server)',
    field: 'metadata.server_url',
    send: (ws, url) =>
      app.post('/v1/reflexes', ws.key, {
        name: 'mcp',
        type: 'effector',
        scope: 'brain',
        brain_id: ws.brainId,
        metadata: { server_url: url },
      }),
    stored: async (ws) => (await app.get('/v1/reflexes', ws.key)).body.reflexes,
  },
  {
    name: 'POST /v1/reflexes (an HTTP tool)',
    field: 'metadata.http_tools.0.url',
    send: (ws, url) =>
      app.post('/v1/reflexes', ws.key, {
        name: 'http',
        type: 'effector',
        scope: 'brain',
        brain_id: ws.brainId,
        metadata: { http_tools: [{ name: 'peek', url: `${url}{path}` }] },
      }),
    stored: async (ws) => (await app.get('/v1/reflexes', ws.key)).body.reflexes,
  },
  {
    name: 'POST /v1/pathways (a literal http node URL)',
    field: 'pathway_graph.nodes.1.data.url',
    send: (ws, url) =>
      app.post('/v1/pathways', ws.key, { name: 'Peek', pathway_graph: graphWith(url) }, ws.brainHeaders),
    stored: async (ws) => (await app.get('/v1/pathways', ws.key, ws.brainHeaders)).body.pathways,
  },
  {
    name: 'POST /v1/assets/ingest (a URL fetched now)',
    field: 'source.value',
    send: (ws, url) => app.post('/v1/assets/ingest', ws.key, { source: { type: 'url', value: url } }, ws.brainHeaders),
    stored: async (ws) => (await app.get('/v1/assets', ws.key, ws.brainHeaders)).body.assets,
  },
  {
    name: 'POST /v1/memories/ingest (a file_url fetched now)',
    field: 'file_url',
    send: (ws, url) => app.post('/v1/memories/ingest', ws.key, { file_url: url }, ws.brainHeaders),
    stored: async (ws) => (await app.get('/v1/memories', ws.key, ws.brainHeaders)).body.memories,
  },
];

describe('outbound URLs are checked when saved', () => {
  it.each(SAVES)('$name refuses every internal address with a 400 naming $field, and stores nothing', async (s) => {
    const ws = await buildWorkspace(app);
    for (const attack of ATTACKS) expectRefused(await s.send(ws, attack), s.field, attack);
    expect(await s.stored(ws)).toEqual([]);
    expect(received).toEqual([]);
  });

  it('updates are checked as creations: a webhook, a reflex and a pathway keep their saved URL', async () => {
    const ws = await buildWorkspace(app);
    const hook = await app.post('/v1/webhook-endpoints', ws.key, {
      url: `http://127.0.0.1:${port}/hook`,
      events: ['job.completed'],
    });
    expect(hook.status, hook.text).toBe(201);
    const reflex = await app.post('/v1/reflexes', ws.key, {
      name: 'calc',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: { handler: 'calculator' },
    });
    expect(reflex.status, reflex.text).toBe(201);
    const pathway = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'Fine', pathway_graph: graphWith(`http://127.0.0.1:${port}/ok`) },
      ws.brainHeaders,
    );
    expect(pathway.status, pathway.text).toBe(201);
    for (const attack of ['http://[::169.254.169.254]/', 'http://[fd00:ec2::254]/', 'http://localhost/']) {
      expectRefused(
        await app.patch(`/v1/webhook-endpoints/${String(hook.body.id)}`, ws.key, { url: attack }),
        'url',
        attack,
      );
      expectRefused(
        await app.put(`/v1/reflexes/${String(reflex.body.id)}`, ws.key, { metadata: { server_url: attack } }),
        'metadata.server_url',
        attack,
      );
      expectRefused(
        await app.put(
          `/v1/pathways/${String(pathway.body.id)}`,
          ws.key,
          { pathway_graph: graphWith(attack) },
          ws.brainHeaders,
        ),
        'pathway_graph.nodes.1.data.url',
        attack,
      );
    }
    expect((await app.get(`/v1/webhook-endpoints/${String(hook.body.id)}`, ws.key)).body.url).toBe(
      `http://127.0.0.1:${port}/hook`,
    );
    expect((await app.get(`/v1/reflexes/${String(reflex.body.id)}`, ws.key)).body.metadata).toEqual({
      handler: 'calculator',
    });
    const kept = await app.get(`/v1/pathways/${String(pathway.body.id)}`, ws.key, ws.brainHeaders);
    expect(kept.body.latest_version).toBe(1);
    expect(JSON.stringify(kept.body.pathway_graph)).toContain(`127.0.0.1:${port}/ok`);
  });

  it("a templated pathway URL is left to the run's check; the operator's allowed host is accepted", async () => {
    const ws = await buildWorkspace(app);
    const templated = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'Templated', pathway_graph: graphWith('{{ input.url }}') },
      ws.brainHeaders,
    );
    expect(templated.status, templated.text).toBe(201);
    const allowed = await app.post('/v1/webhook-endpoints', ws.key, {
      url: `http://127.0.0.1:${port}/allowed`,
      events: ['job.completed'],
    });
    expect(allowed.status, allowed.text).toBe(201);
  });
});

describe('outbound URLs are checked again when used', () => {
  it('a webhook whose host now resolves to loopback is never called: the delivery fails with the reason', async () => {
    const ws = await buildWorkspace(app);
    const created = await app.post<{ id: string }>('/v1/webhook-endpoints', ws.key, {
      url: `http://127.0.0.1:${port}/saved`,
      events: ['job.completed'],
    });
    expect(created.status, created.text).toBe(201);
    // The name resolved to a public address when it was saved; it resolves to loopback now (rebinding):
    // the stored row names `localhost`, which the guard resolves at send time.
    await app.deps.db
      .collection('webhook_endpoints')
      .updateOne({ _id: created.body.id as never }, { $set: { url: `http://localhost:${port}/rebound` } });
    const neuron = await app.post<{ id: string }>('/v1/neurons', ws.key, {
      name: 'hooked',
      brain_id: ws.brainId,
      neuron_config: { model: 'local/echo' },
    });
    const inv = await app.post<{ job_id: string }>(`/v1/neurons/${neuron.body.id}/invoke`, ws.key, { message: 'hi' });
    expect((await settleJob(app, ws.key, inv.body.job_id)).status).toBe('completed');
    const end = Date.now() + 30_000;
    let delivery: { status: string; failed_reason: string | null } | undefined;
    while (Date.now() < end) {
      const list = await app.get<{ deliveries: { status: string; failed_reason: string | null }[] }>(
        `/v1/webhook-endpoints/${created.body.id}/deliveries`,
        ws.key,
      );
      delivery = list.body.deliveries[0];
      if (delivery && delivery.status !== 'pending') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(delivery?.status).toBe('failed');
    expect(delivery?.failed_reason).toMatch(/Outbound request refused: localhost resolves to a loopback address/);
    expect(received.filter((p) => p.startsWith('/rebound'))).toEqual([]);
  });

  it('a URL fetched at once is checked by name and address: localhost and [::127.0.0.1] reach nothing', async () => {
    const ws = await buildWorkspace(app);
    for (const url of [`http://localhost:${port}/doc`, `http://[::127.0.0.1]:${port}/doc`]) {
      expectRefused(
        await app.post('/v1/assets/ingest', ws.key, { source: { type: 'url', value: url } }, ws.brainHeaders),
        'source.value',
        url,
      );
    }
    expect(received.filter((p) => p.startsWith('/doc'))).toEqual([]);
  });
});
