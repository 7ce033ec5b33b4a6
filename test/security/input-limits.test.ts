import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';

/**
 * Threat class: input that holds or breaks a shared process (docs/security.md). The actor is any
 * caller (a member, an anonymous share-link holder, a server a pathway calls); what they must never
 * cause is a 500 (a stack overflow while a value is validated, encoded or stored) or a half-stored
 * request. A JSON value nested deeper than 64 levels is a 400 naming its field, and nothing is stored.
 */
const { app, llm } = usePlatform({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'] });

/** `n` nested objects as a value (for the scripted model, which sends its tool arguments as JSON). */
const nested = (n: number): object => {
  let v: object = {};
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
};

/** `n` nested objects (`{"a":{"a":…1}}`) or arrays, as JSON text: the parser reads them, nothing else may recurse on them. */
const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const deepArray = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const TOO_DEEP = /nested deeper than 64 levels/;

async function postRaw(path: string, auth: string | undefined, raw: string, headers: Record<string, string> = {}) {
  return app.request('POST', path, { auth, raw, headers });
}

let server: Server;
let base = '';
beforeAll(async () => {
  // A server a pathway's http node calls: its answer nests 10,000 levels deep.
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(deepArray(10_000));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

describe('JSON depth is bounded for every body and stored field', () => {
  it('metadata nested 10,000 levels (objects or arrays) is a 400 naming metadata, and the trace is not created', async () => {
    const ws = await buildWorkspace(app);
    const member = await ws.jwt([]);
    for (const metadata of [deepObject(10_000), `{"x":${deepArray(10_000)}}`]) {
      const traceId = randomUUID();
      const r = await postRaw(`/v1/traces/${traceId}/messages`, member, `{"content":"hi","metadata":${metadata}}`);
      expect(r.status, r.text.slice(0, 300)).toBe(400);
      expect(r.body).toMatchObject({ code: 'VALIDATION_ERROR' });
      expect(String(r.body.message)).toMatch(/^metadata: nested deeper than 64 levels$/);
      expect((await app.get(`/v1/traces/${traceId}`, ws.key)).status).toBe(404);
    }
  });

  it('a body that is itself nested 10,000 levels is a 400 naming the body', async () => {
    const ws = await buildWorkspace(app);
    const r = await postRaw(`/v1/traces/${randomUUID()}/messages`, ws.key, deepArray(10_000));
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    expect(String(r.body.message)).toMatch(/^body: nested deeper than 64 levels$/);
    const a = await postRaw('/v1/artifacts', ws.key, `{"title":"x","content":${deepObject(10_000)}}`, ws.brainHeaders);
    expect(a.status, a.text.slice(0, 300)).toBe(400);
    expect(String(a.body.message)).toMatch(/^content: nested deeper/);
  });

  it('64 levels are accepted and stored as sent; 65 are refused', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    // The body is one level: metadata may nest 63 more.
    const ok = await postRaw(`/v1/traces/${traceId}/messages`, ws.key, `{"content":"hi","metadata":${deepObject(63)}}`);
    expect(ok.status, ok.text.slice(0, 300)).toBe(201);
    const msgs = await app.get<{ engrams: { metadata: unknown }[] }>(`/v1/traces/${traceId}/messages`, ws.key);
    expect(JSON.stringify(msgs.body.engrams[0].metadata)).toBe(deepObject(63));
    const over = await postRaw(
      `/v1/traces/${traceId}/messages`,
      ws.key,
      `{"content":"hi","metadata":${deepObject(64)}}`,
    );
    expect(over.status).toBe(400);
    expect(String(over.body.message)).toMatch(TOO_DEEP);
    expect((await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams).toHaveLength(
      1,
    );
  });

  it('the OpenAI-compatible endpoint refuses deep messages with a 400 in its own error shape, and starts no job', async () => {
    const ws = await buildWorkspace(app);
    const r = await postRaw(
      '/v1/openai/chat/completions',
      ws.key,
      `{"model":"anything","messages":[{"role":"user","content":${deepObject(10_000)}}]}`,
    );
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    const err = (r.body as { error: { message: string; type: string } }).error;
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toMatch(/^messages: nested deeper than 64 levels$/);
    const jobs = await app.get<{ jobs: unknown[] }>('/v1/jobs', ws.key);
    expect(jobs.body.jobs).toHaveLength(0);
  });

  it('MCP JSON-RPC bodies and share-link routes are bounded too', async () => {
    const ws = await buildWorkspace(app);
    const mcp = await postRaw(
      '/v1/mcp',
      ws.key,
      `{"jsonrpc":"2.0","id":1,"method":"initialize","params":${deepObject(10_000)}}`,
      { accept: 'application/json, text/event-stream' },
    );
    expect(mcp.status, mcp.text.slice(0, 300)).toBe(400);
    expect(String(mcp.body.message)).toMatch(/^params: nested deeper than 64 levels$/);
    const pub = await postRaw(
      `/v1/public/receptors/by-id/${randomUUID()}/execute?t=cxs_unknown`,
      undefined,
      `{"message":"hi","trace_id":${deepArray(10_000)}}`,
    );
    expect(pub.status, pub.text.slice(0, 300)).toBe(400);
    expect(String(pub.body.message)).toMatch(/^trace_id: nested deeper than 64 levels$/);
  });

  it('a model whose tool call arguments nest 1,000 levels gets a tool error back, and the run completes', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'deep-args',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini', tools: ['calculator'] },
    });
    expect(n.status, n.text).toBe(201);
    llm.setDefault((body) => {
      const toolMsg = body.messages.find((m) => m.role === 'tool');
      if (!toolMsg)
        return { toolCalls: [{ name: 'calculator', arguments: { expression: '1 + 1', x: nested(1_000) } }] };
      return { text: `the tool said ${String(toolMsg.content)}` };
    });
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'add' });
    expect(inv.status, inv.text).toBe(202);
    const jobId = String(inv.body.job_id);
    const until = Date.now() + 45_000;
    let job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    while (job.status !== 'completed' && job.status !== 'failed') {
      if (Date.now() > until) throw new Error(`job ${jobId} is still ${job.status}`);
      await new Promise((res) => setTimeout(res, 100));
      job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    }
    expect(job.status, job.failedReason ?? '').toBe('completed');
    expect((job.result as { text: string }).text).toContain('arguments: nested deeper than 64 levels');
  });

  it('an http node whose server answers JSON nested 10,000 levels fails the node clearly; the platform answers on', async () => {
    const ws = await buildWorkspace(app);
    const pathway = {
      nodes: [
        { id: 's', type: 'start' },
        { id: 'h', type: 'http', data: { url: `${base}/deep` } },
        { id: 'o', type: 'output' },
      ],
      edges: [
        { source: 's', target: 'h' },
        { source: 'h', target: 'o' },
      ],
    };
    const r = await app.post('/v1/jobs', ws.key, { pathway, input: {} }, ws.brainHeaders);
    expect(r.status, r.text).toBe(200);
    const jobId = String(r.body.job_id);
    const until = Date.now() + 45_000;
    let job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    while (job.status !== 'completed' && job.status !== 'failed') {
      if (Date.now() > until) throw new Error(`job ${jobId} is still ${job.status}`);
      await new Promise((res) => setTimeout(res, 100));
      job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    }
    expect(job.status).toBe('failed');
    expect(job.failedReason).toMatch(TOO_DEEP);
    expect((await app.get(`/v1/jobs/${jobId}`, ws.key)).status).toBe(200);
  });
});
