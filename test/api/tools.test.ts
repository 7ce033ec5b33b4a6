import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createGuard, OutboundBlocked } from '../../src/net/guard.js';
import { MAX_TOOL_BODY_BYTES, MAX_TOOL_RESULT_CHARS } from '../../src/tools/remote.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { mcpHandler } from '../support/mcp-server.js';
import { useSimPlatform } from '../support/platform.js';
import { dataOf, readSse } from '../support/sse.js';

/** Loopback servers are allowed by host for the platform under test (OUTBOUND_ALLOW_HOSTS); the guard tests build their own guard without it. */
const { app, sim } = useSimPlatform(
  { firstTokenMs: [20, 60], interTokenMs: 5, tokens: [3, 6] },
  { OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'] },
);

const listen = async (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};
const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
});

/** An MCP server built with the official SDK (Streamable HTTP, stateless), with two tools. */
let mcpUrl = '';
const mcpCalls: { tool: string; args: unknown; meta: unknown }[] = [];
/** A plain HTTP tool server: weather by city; fails with 503 on the first call for "flaky"; a long answer for "long". */
let httpUrl = '';
const httpCalls: { path: string; idempotencyKey: string | undefined }[] = [];
let flakyFailures = 1;
const endless = { started: false, finished: false, closedAfter: 0 };

beforeAll(async () => {
  const mcp = await listen(
    mcpHandler('orders', (server) => {
      server.registerTool(
        'lookup_order',
        { description: 'Looks up an order by id', inputSchema: { order_id: z.string() } },
        async ({ order_id }, extra) => {
          mcpCalls.push({ tool: 'lookup_order', args: { order_id }, meta: extra._meta });
          return { content: [{ type: 'text', text: `order ${order_id}: shipped on 2026-11-20` }] };
        },
      );
      server.registerTool(
        'add',
        { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
        async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
      );
    }),
  );
  const httpTools = await listen((req, res) => {
    httpCalls.push({ path: req.url ?? '', idempotencyKey: req.headers['idempotency-key'] as string | undefined });
    const city = decodeURIComponent((req.url ?? '').split('/weather/')[1]?.split('?')[0] ?? '');
    if (city === 'flaky' && flakyFailures-- > 0) {
      res.writeHead(503).end('busy');
      return;
    }
    if (city === 'long') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(MAX_TOOL_RESULT_CHARS + 500));
      return;
    }
    if (city === 'endless') {
      // Up to 64 MiB, as fast as the reader takes it: the platform must stop reading long before.
      res.writeHead(200, { 'content-type': 'text/plain' });
      endless.started = true;
      let sent = 0;
      const chunk = Buffer.alloc(64 * 1024, 'z');
      const more = () => {
        while (sent < 64 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', more);
            return;
          }
        }
        endless.finished = true;
        res.end();
      };
      res.on('close', () => {
        endless.closedAfter = sent;
      });
      more();
      return;
    }
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ city, forecast: 'sunny', unit: new URL(req.url!, 'http://x').searchParams.get('unit') }));
  });
  servers.push(mcp.server, httpTools.server);
  mcpUrl = `${mcp.url}/mcp`;
  httpUrl = httpTools.url;
});

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
async function neuronWithReflex(ws: Ws, name: string, metadata: Record<string, unknown>) {
  const reflex = await app.post('/v1/reflexes', ws.key, {
    name: `${name}-tools`,
    type: 'effector',
    scope: 'brain',
    brain_id: ws.brainId,
    metadata,
  });
  expect(reflex.status, reflex.text).toBe(201);
  const n = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim' },
  });
  await app.post(`/v1/neurons/${String(n.body.id)}/reflexes`, ws.key, { reflex_id: reflex.body.id });
  return String(n.body.id);
}
/** The simulator calls `name` with `args` on the first turn, then answers in text. */
function callOnce(name: string, args: object) {
  sim.configure({
    toolCalls: (body) => (body.messages.some((m) => m.role === 'tool') ? null : [{ name, arguments: args }]),
  });
}

describe('the outbound guard', () => {
  const guard = createGuard({
    allowHosts: [],
    resolve: async (host) =>
      host === 'internal.example' ? [{ address: '10.1.2.3', family: 4 }] : [{ address: '93.184.215.14', family: 4 }],
  });
  it.each([
    ['http://127.0.0.1:9/', 'loopback'],
    ['http://10.0.0.1/', 'private'],
    ['http://169.254.169.254/latest/meta-data/', 'linkLocal'],
    ['http://[::1]:9/', 'loopback'],
    ['http://internal.example/', 'private'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://100.64.0.1/', 'carrierGradeNat'],
  ])('refuses %s (%s)', async (url, range) => {
    const err = await guard.fetch(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundBlocked);
    expect((err as Error).message).toContain(range);
  });
  it('refuses other schemes and credentials in URLs', async () => {
    await expect(guard.fetch('ftp://example.com/x')).rejects.toBeInstanceOf(OutboundBlocked);
    await expect(guard.fetch('file:///etc/passwd')).rejects.toBeInstanceOf(OutboundBlocked);
    await expect(guard.fetch('http://user:pw@example.com/')).rejects.toBeInstanceOf(OutboundBlocked);
  });
  it('an allow-listed server works, and a redirect from it to a private address is refused', async () => {
    const redirecting = await listen((req, res) => {
      if (req.url === '/to-metadata')
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      else if (req.url === '/to-other-port') res.writeHead(302, { location: 'http://localhost:9/' }).end();
      else if (req.url === '/to-self') res.writeHead(301, { location: '/ok' }).end();
      else res.writeHead(200).end('fine');
    });
    servers.push(redirecting.server);
    const port = new URL(redirecting.url).port;
    const allowed = createGuard({ allowHosts: [`127.0.0.1:${port}`] });
    expect(await (await allowed.fetch(`${redirecting.url}/ok`)).text()).toBe('fine');
    expect(await (await allowed.fetch(`${redirecting.url}/to-self`)).text()).toBe('fine');
    await expect(allowed.fetch(`${redirecting.url}/to-metadata`)).rejects.toThrow(/linkLocal/);
    await expect(allowed.fetch(`${redirecting.url}/to-other-port`)).rejects.toThrow(/loopback/);
    // Another port of the same host is not on the list.
    await expect(allowed.fetch('http://127.0.0.1:9/')).rejects.toBeInstanceOf(OutboundBlocked);
  });
});

describe('the outbound guard: where it connects, what it forwards, how much it reads', () => {
  let peer = '';
  let port = '';
  const seenAuth: (string | undefined)[] = [];
  let other = '';
  beforeAll(async () => {
    const a = await listen((req, res) => {
      if (req.url === '/ok') res.writeHead(200).end('fine');
      else if (req.url === '/to-other-origin') res.writeHead(302, { location: `${other}/who` }).end();
      else if (req.url === '/to-same-origin') res.writeHead(302, { location: '/who' }).end();
      else if (req.url === '/who') {
        seenAuth.push(req.headers.authorization);
        res.writeHead(200).end('ok');
      } else if (req.url === '/big')
        res.writeHead(200, { 'content-length': '5000' }).end('x'.repeat(5000)); // announced
      else if (req.url === '/big-chunked') {
        for (let i = 0; i < 5; i++) res.write('y'.repeat(1000));
        res.end();
      } else res.writeHead(404).end();
    });
    const b = await listen((req, res) => {
      seenAuth.push(req.headers.authorization);
      res.writeHead(200).end('elsewhere');
    });
    servers.push(a.server, b.server);
    peer = a.url;
    port = new URL(a.url).port;
    other = b.url;
  });

  it('connects to the address it checked: a name only its resolver knows reaches the server it resolved to', async () => {
    // The system resolver has never heard of this name, so the request can only have gone to the checked address.
    const guard = createGuard({
      allowHosts: ['tools.internal.test'],
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    expect(await (await guard.fetch(`http://tools.internal.test:${port}/ok`)).text()).toBe('fine');
    // Without the allow-list entry, the same answer from DNS is refused before any connection.
    const strict = createGuard({ allowHosts: [], resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    await expect(strict.fetch(`http://tools.internal.test:${port}/ok`)).rejects.toThrow(/loopback/);
    // A real name that resolves to loopback (the system resolver) is refused too.
    await expect(createGuard({ allowHosts: [] }).fetch(`http://localhost:${port}/ok`)).rejects.toThrow(/loopback/);
  });

  it('drops Authorization on a redirect to another origin, keeps it on the same origin; redirect: error refuses', async () => {
    const guard = createGuard({ allowHosts: ['127.0.0.1'] });
    seenAuth.length = 0;
    expect(
      await (await guard.fetch(`${peer}/to-same-origin`, { headers: { authorization: 'Bearer user-token' } })).text(),
    ).toBe('ok');
    expect(
      await (await guard.fetch(`${peer}/to-other-origin`, { headers: { authorization: 'Bearer user-token' } })).text(),
    ).toBe('elsewhere');
    expect(seenAuth).toEqual(['Bearer user-token', undefined]);
    await expect(guard.fetch(`${peer}/to-same-origin`, { redirect: 'error' })).rejects.toThrow(/redirect/);
    expect((await guard.fetch(`${peer}/to-same-origin`, { redirect: 'manual' })).status).toBe(302);
  });

  it('refuses an answer longer than its cap, announced or streamed', async () => {
    const guard = createGuard({ allowHosts: ['127.0.0.1'], maxResponseBytes: 1000 });
    await expect(guard.fetch(`${peer}/big`)).rejects.toThrow(/longer than 1000 bytes/);
    await expect((await guard.fetch(`${peer}/big-chunked`)).text()).rejects.toThrow();
    expect(
      await (
        await createGuard({ allowHosts: ['127.0.0.1'], maxResponseBytes: 5000 }).fetch(`${peer}/big-chunked`)
      ).text(),
    ).toHaveLength(5000);
  });
});

describe('reflex tools that run', () => {
  it("an MCP server's tools are offered and called by a run: tool call → result → final answer, on the stream and in the engram", async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await neuronWithReflex(ws, 'support', { server_url: mcpUrl });
    callOnce('lookup_order', { order_id: 'A-17' });
    const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, {
      message: 'Where is my order A-17?',
      stream: true,
    });
    expect(inv.status).toBe(202);
    const sse = await readSse(`${app.url}/v1/jobs/${String(inv.body.job_id)}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      timeoutMs: 30_000,
    });
    const tool = sse.events.map(dataOf).find((e) => e.type === 'tool');
    expect(tool).toMatchObject({ name: 'lookup_order', result: 'order A-17: shipped on 2026-11-20' });
    expect(dataOf(sse.events.at(-1)!).type).toBe('complete');
    // The model was offered both tools of the server, with their schemas.
    const offered = (sim.requests[sim.requests.length - 2].tools ?? []) as {
      function: { name: string; parameters: { properties: Record<string, unknown> } };
    }[];
    expect(offered.map((t) => t.function.name).sort()).toEqual(['add', 'lookup_order']);
    expect(
      Object.keys(offered.find((t) => t.function.name === 'lookup_order')!.function.parameters.properties),
    ).toEqual(['order_id']);
    // The tool result went back to the model, and the call carried an idempotency key.
    expect(sim.requests.at(-1)!.messages.find((m) => m.role === 'tool')?.content).toBe(
      'order A-17: shipped on 2026-11-20',
    );
    expect(mcpCalls.at(-1)).toMatchObject({
      tool: 'lookup_order',
      args: { order_id: 'A-17' },
      meta: { idempotency_key: expect.stringContaining(String(inv.body.job_id)) },
    });
    const msgs = (
      await app.get<{
        engrams: { source_type: string; metadata: { tool_calls?: { name: string; result: string }[] } }[];
      }>(`/v1/traces/${String(inv.body.trace_id)}/messages`, ws.key)
    ).body.engrams;
    expect(msgs.find((m) => m.source_type === 'neuron')!.metadata.tool_calls).toEqual([
      expect.objectContaining({ name: 'lookup_order', result: 'order A-17: shipped on 2026-11-20' }),
    ]);
  });

  it('an HTTP tool runs with its URL template and an Idempotency-Key; a 503 is retried; a long result is capped with a note', async () => {
    const ws = await buildWorkspace(app);
    const http_tools = [
      {
        name: 'weather',
        description: 'Forecast for a city',
        method: 'GET',
        url: `${httpUrl}/weather/{city}`,
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' }, unit: { type: 'string' } },
          required: ['city'],
        },
      },
    ];
    expect(
      (
        await app.post('/v1/reflexes', ws.key, {
          name: 'bad',
          type: 'effector',
          scope: 'brain',
          brain_id: ws.brainId,
          metadata: { http_tools: [{ name: 'x y', url: 'ftp://nope' }] },
        })
      ).status,
    ).toBe(400);
    const neuronId = await neuronWithReflex(ws, 'forecaster', { http_tools });

    callOnce('weather', { city: 'Lisbon', unit: 'C' });
    const first = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'Weather in Lisbon?' });
    const job = await settleJob(app, ws.key, String(first.body.job_id));
    expect(job.status).toBe('completed');
    const call = httpCalls.find((c) => c.path.startsWith('/weather/Lisbon'))!;
    expect(call.path).toBe('/weather/Lisbon?unit=C');
    expect(call.idempotencyKey).toContain(job.job_id);
    expect((job.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toContain('"forecast":"sunny"');

    callOnce('weather', { city: 'flaky' });
    const flaky = await settleJob(
      app,
      ws.key,
      String((await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'flaky?' })).body.job_id),
    );
    const flakyCalls = httpCalls.filter((c) => c.path.startsWith('/weather/flaky'));
    expect(flakyCalls).toHaveLength(2); // one 503, one retry
    expect(new Set(flakyCalls.map((c) => c.idempotencyKey)).size).toBe(1); // the retry is recognisable
    expect((flaky.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toContain('sunny');

    callOnce('weather', { city: 'long' });
    const long = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'long?' });
    await settleJob(app, ws.key, String(long.body.job_id));
    const toolMsg = sim.requests.at(-1)!.messages.find((m) => m.role === 'tool')!.content as string;
    expect(toolMsg.length).toBeLessThan(MAX_TOOL_RESULT_CHARS + 200);
    expect(toolMsg).toMatch(/\[truncated: 500 more characters/);

    // An answer without end: read up to the cap, the connection dropped, the model told.
    callOnce('weather', { city: 'endless' });
    const huge = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'endless?' });
    expect((await settleJob(app, ws.key, String(huge.body.job_id))).status).toBe('completed');
    const hugeMsg = sim.requests.at(-1)!.messages.find((m) => m.role === 'tool')!.content as string;
    expect(hugeMsg).toMatch(
      new RegExp(
        `\\[truncated: the answer was longer than ${MAX_TOOL_BODY_BYTES} bytes and only its first ${MAX_TOOL_RESULT_CHARS} characters`,
      ),
    );
    expect(hugeMsg.length).toBeLessThan(MAX_TOOL_RESULT_CHARS + 300);
    await expect.poll(() => endless.closedAfter, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(endless.finished).toBe(false);
  });

  it('a tool URL the guard refuses is refused at save; one stored before answers the model with the reason', async () => {
    const ws = await buildWorkspace(app);
    const snoop = { http_tools: [{ name: 'metadata', url: 'http://169.254.169.254/latest/meta-data/{path}' }] };
    const refused = await app.post('/v1/reflexes', ws.key, {
      name: 'snooper-tools',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: snoop,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/^metadata\.http_tools\.0\.url: refused by the outbound guard.*linkLocal/);
    // A reflex stored before the save-time check (written to the store directly): the call is checked again.
    const neuronId = await neuronWithReflex(ws, 'snooper', {
      http_tools: [{ name: 'metadata', url: 'https://tools.example.com/meta-data/{path}' }],
    });
    const [reflex] = await app.deps.repos.reflexes.someOfWorkspace(ws.workspaceId, 1);
    await app.deps.repos.reflexes.update(ws.workspaceId, reflex._id, { metadata: snoop, updatedAt: new Date() });
    callOnce('metadata', { path: 'iam' });
    const job = await settleJob(
      app,
      ws.key,
      String(
        (await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: `snoop ${randomUUID()}` })).body.job_id,
      ),
    );
    expect(job.status).toBe('completed');
    expect((job.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toMatch(
      /Outbound request refused.*linkLocal/,
    );
  });
});
