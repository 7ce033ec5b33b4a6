/**
 * The pathway `http` node end to end: the real API and worker (usePlatform) and a receiver on
 * 127.0.0.1 that records every request. Loopback is allowed by host for the platform under test
 * (OUTBOUND_ALLOW_HOSTS), as for the tool servers of test/api/tools.test.ts; every other address
 * is checked by the outbound guard as in production.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';
import { readSse } from '../support/sse.js';

const { app } = usePlatform({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'] });

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
interface Received {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** What the receiver got, in order; `/flaky/<key>` answers 500 the first time each key is seen, then 200. */
const received: Received[] = [];
const flakySeen = new Set<string>();
let base = '';
let server: Server;

function receive(req: IncomingMessage, res: ServerResponse) {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    const path = req.url ?? '';
    received.push({ method: req.method ?? '', path, headers: req.headers, body });
    const json = (status: number, v: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    if (path.startsWith('/flaky/')) {
      if (!flakySeen.has(path)) {
        flakySeen.add(path);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('temporarily broken');
        return;
      }
      json(200, { ok: true });
      return;
    }
    if (path.startsWith('/missing/')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`nothing at ${path}`);
      return;
    }
    if (path.startsWith('/text')) {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-served-by': 'receiver' }).end('plain words');
      return;
    }
    // Echoes what it got, the Authorization header included: the node's value must not keep a secret.
    json(req.method === 'POST' ? 201 : 200, {
      method: req.method,
      path,
      authorization: req.headers.authorization ?? null,
      body: body ? (JSON.parse(body) as unknown) : null,
    });
  });
}

beforeAll(async () => {
  server = createServer(receive);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

/** An inline pathway start → http → output, run as a job of the workspace; returns the settled job. */
async function runHttp(ws: Ws, http: Record<string, unknown>, input: Record<string, unknown> = {}) {
  const pathway = {
    nodes: [
      { id: 's', type: 'start' },
      { id: 'h', type: 'http', data: http },
      { id: 'o', type: 'output' },
    ],
    edges: [
      { source: 's', target: 'h' },
      { source: 'h', target: 'o' },
    ],
  };
  const r = await app.post('/v1/jobs', ws.key, { pathway, input }, ws.brainHeaders);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const jobId = String(r.body.job_id);
  const until = Date.now() + 45_000;
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    if (job.status === 'completed' || job.status === 'failed') return { jobId, job };
    if (Date.now() > until) throw new Error(`job ${jobId} is still ${job.status}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** Everything a job left where a person or a log could read it: status, stream, stored documents, workflow history. */
async function everythingOf(ws: Ws, jobId: string): Promise<string> {
  const status = (await app.get(`/v1/jobs/${jobId}/status`, ws.key)).text;
  const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
    headers: { authorization: `Bearer ${ws.key}` },
  });
  const stream = sse.events.map((e) => e.data).join('\n');
  const docs: unknown[] = [];
  for (const c of await app.deps.db.listCollections({}, { nameOnly: true }).toArray()) {
    if (c.name === 'workspace_secrets') continue; // sealed values; checked by the secrets tests
    docs.push(...(await app.deps.db.collection(c.name).find({ workspaceId: ws.workspaceId }).toArray()));
  }
  const history = await app.deps.temporal.client.workflow.getHandle(jobId).fetchHistory();
  return [status, stream, JSON.stringify(docs), ...textsOf(history)].join('\n');
}

/** Every string in a workflow history, payloads (bytes) decoded as UTF-8: activity inputs, results, failures. */
function textsOf(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (v instanceof Uint8Array) return [Buffer.from(v).toString('utf8')];
  if (Array.isArray(v)) return v.flatMap(textsOf);
  if (typeof v === 'object' && v !== null) return Object.values(v).flatMap(textsOf);
  return [];
}

describe('pathway http node', () => {
  it('GET with a templated URL: the answer is the value; the request carries the Idempotency-Key', async () => {
    const ws = await buildWorkspace(app);
    const { jobId, job } = await runHttp(
      ws,
      { url: `${base}/items/{{ input.id }}?q={{ $encodeUrlComponent(input.q) }}` },
      { id: 42, q: 'a b' },
    );
    expect(job.status, job.failedReason ?? '').toBe('completed');
    const got = received.filter((r) => String(r.headers['idempotency-key']).startsWith(jobId));
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ method: 'GET', path: '/items/42?q=a%20b', body: '' });
    expect(got[0].headers['idempotency-key']).toBe(`${jobId}:h:1`);
    const output = (job.result as { output: { status: number; headers: Record<string, string>; body: unknown } })
      .output;
    expect(output.status).toBe(200);
    expect(output.headers['content-type']).toBe('application/json');
    expect(output.body).toEqual({ method: 'GET', path: '/items/42?q=a%20b', authorization: null, body: null });

    // A text answer is the value as text.
    const text = await runHttp(ws, { url: `${base}/text` });
    expect((text.job.result as { output: unknown }).output).toMatchObject({
      status: 200,
      headers: { 'x-served-by': 'receiver' },
      body: 'plain words',
    });
  });

  it('POST with a JSON body and a secret header: the receiver gets the secret; the job, stream, documents and history never hold it', async () => {
    const ws = await buildWorkspace(app);
    const secret = `tok-${randomUUID()}`;
    const admin = await ws.jwt(['workspace_admin']);
    expect((await app.put('/v1/secrets/TOKEN', admin, { value: secret })).status).toBe(200);
    const { jobId, job } = await runHttp(
      ws,
      {
        method: 'POST',
        url: `${base}/orders`,
        headers: { Authorization: 'Bearer {{ secrets.TOKEN }}', 'X-Order': '{{ input.order }}' },
        body: { order: '{{ input.order }}', items: ['{{ input.item }}', 'fixed'], count: 2 },
        expect: [201],
      },
      { order: 'A-1', item: 'pen' },
    );
    expect(job.status, job.failedReason ?? '').toBe('completed');
    const got = received.find((r) => r.headers['idempotency-key'] === `${jobId}:h:1`);
    expect(got).toBeDefined();
    expect(got!.method).toBe('POST');
    expect(got!.headers.authorization).toBe(`Bearer ${secret}`);
    expect(got!.headers['x-order']).toBe('A-1');
    expect(got!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(got!.body)).toEqual({ order: 'A-1', items: ['pen', 'fixed'], count: 2 });
    // The receiver echoed the header back: the node's value has it redacted.
    const output = (job.result as { output: { status: number; body: { authorization: string } } }).output;
    expect(output.status).toBe(201);
    expect(output.body.authorization).toBe('Bearer [redacted]');
    const seen = await everythingOf(ws, jobId);
    // What was read is the job's (its result, stream and history are there), without the secret.
    expect(seen).toContain('Bearer [redacted]');
    expect(seen).toContain('{{ secrets.TOKEN }}');
    expect(seen).not.toContain(secret);
  });

  it('a status outside expect fails the node with the status and an excerpt, secrets redacted from the message', async () => {
    const ws = await buildWorkspace(app);
    const secret = `key-${randomUUID()}`;
    await app.put('/v1/secrets/PATH_KEY', await ws.jwt(['workspace_admin']), { value: secret });
    const { jobId, job } = await runHttp(ws, {
      url: `${base}/missing/{{ secrets.PATH_KEY }}`,
      retry: { max_attempts: 3 },
    });
    expect(job.status).toBe('failed');
    expect(job.failedReason).toContain('answered 404, expected 2xx');
    expect(job.failedReason).toContain('nothing at /missing/[redacted]');
    // A 404 is not retried.
    expect(received.filter((r) => r.headers['idempotency-key'] === `${jobId}:h:1`)).toHaveLength(1);
    expect(await everythingOf(ws, jobId)).not.toContain(secret);
  });

  it('a retried call carries the same Idempotency-Key: 500 first, then 200, with retry max_attempts 2', async () => {
    const ws = await buildWorkspace(app);
    const key = randomUUID();
    const { jobId, job } = await runHttp(ws, {
      url: `${base}/flaky/${key}`,
      retry: { max_attempts: 2, initial_interval_ms: 100 },
    });
    expect(job.status, job.failedReason ?? '').toBe('completed');
    const got = received.filter((r) => r.path === `/flaky/${key}`);
    expect(got).toHaveLength(2);
    expect(got[0].headers['idempotency-key']).toBe(`${jobId}:h:1`);
    expect(got[1].headers['idempotency-key']).toBe(got[0].headers['idempotency-key']);
    expect((job.result as { output: unknown }).output).toMatchObject({ status: 200, body: { ok: true } });
  });

  it('an address the guard refuses fails the node with its reason, without retries', async () => {
    const ws = await buildWorkspace(app);
    const metadata = await runHttp(ws, { url: 'http://169.254.169.254/latest/meta-data/' });
    expect(metadata.job.status).toBe('failed');
    expect(metadata.job.failedReason).toMatch(/Outbound request refused: 169\.254\.169\.254 resolves to a linkLocal/);
    // localhost is loopback too, and only 127.0.0.1 is on the allow-list.
    const port = new URL(base).port;
    const loopback = await runHttp(ws, { url: `http://localhost:${port}/items/1` });
    expect(loopback.job.status).toBe('failed');
    expect(loopback.job.failedReason).toMatch(/Outbound request refused: localhost resolves to a loopback address/);
    expect(received.filter((r) => String(r.headers['idempotency-key']).startsWith(loopback.jobId))).toEqual([]);
    const scheme = await runHttp(ws, { url: 'file:///etc/passwd' });
    expect(scheme.job.failedReason).toContain('file: URLs are not allowed');
  });

  it('a secret the workspace does not have fails the node before any request', async () => {
    const ws = await buildWorkspace(app);
    const { jobId, job } = await runHttp(ws, {
      url: `${base}/items/1`,
      headers: { Authorization: 'Bearer {{ secrets.NOT_SET }}' },
    });
    expect(job.status).toBe('failed');
    expect(job.failedReason).toContain('secret "NOT_SET" is not set in this workspace');
    expect(received.filter((r) => String(r.headers['idempotency-key']).startsWith(jobId))).toEqual([]);
  });

  it('validation refuses an http node with an unknown key, naming it', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post(
      '/v1/pathways/validate',
      ws.key,
      {
        nodes: [
          { id: 's', type: 'start' },
          { id: 'h', type: 'http', data: { url: `${base}/x`, verb: 'GET' } },
        ],
        edges: [{ source: 's', target: 'h' }],
      },
      ws.brainHeaders,
    );
    expect(JSON.stringify(r.body)).toContain('unknown key \\"verb\\"');
  });
});
