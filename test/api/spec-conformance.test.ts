/**
 * Black-box conformance tests written from the public API contract only (the OpenAPI document
 * served at /v1/openapi.json and docs/): traces, pathways, neurons, reflexes without connection
 * routes, jobs, auth, events, errors, limits, versioning, interventions, config and health.
 * Where the contract is silent, docs/decisions.md is taken as the intended behaviour (marked
 * SPEC-SILENT). Tests that fail because the platform disagrees with the spec are marked BUG.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildWorkspace, type TestResponse } from '../support/app.js';
import { lastUserText } from '../support/scripted-openai.js';
import { dataOf, readSse } from '../support/sse.js';
import { usePlatform } from '../support/platform.js';

const { app, llm } = usePlatform();
const MODEL = 'openai/gpt-4o-mini';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CURSOR_RE = /^\d+-\d+$/;
const JOB_STATUSES = ['pending', 'running', 'completed', 'failed', 'waiting', 'paused'];
const INTERVENTION_STATUSES = ['pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled'];

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
type Obj = Record<string, unknown>;

const obj = (x: unknown): Obj => {
  expect(x, 'expected a JSON object').toBeTypeOf('object');
  expect(x).not.toBeNull();
  expect(Array.isArray(x)).toBe(false);
  return x as Obj;
};
const arr = (x: unknown): Obj[] => {
  expect(Array.isArray(x), `expected an array, got ${JSON.stringify(x)?.slice(0, 200)}`).toBe(true);
  return x as Obj[];
};
/** Lists whose response shape the spec does not show: the body itself or its first array property. */
const itemsOf = (body: unknown): Obj[] => {
  if (Array.isArray(body)) return body as Obj[];
  const found = Object.values(obj(body)).find((v) => Array.isArray(v));
  expect(found, `no array in ${JSON.stringify(body).slice(0, 200)}`).toBeDefined();
  return found as Obj[];
};
const isIso = (v: unknown) => typeof v === 'string' && !Number.isNaN(Date.parse(v)) && /^\d{4}-\d{2}-\d{2}T/.test(v);
const auth = (ws: Ws) => ({ authorization: `Bearer ${ws.key}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Error body is exactly { message: string, code: string } (Errors). */
function expectError(r: TestResponse, status: number, code?: string) {
  expect(r.status, `${r.status} ${r.text.slice(0, 300)}`).toBe(status);
  const body = obj(r.body);
  expect(Object.keys(body).sort()).toEqual(['code', 'message']);
  expect(typeof body.message).toBe('string');
  expect(typeof body.code).toBe('string');
  if (code) expect(body.code).toBe(code);
}

async function createNeuron(ws: Ws, name: string, config: Obj = {}, extra: Obj = {}) {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: MODEL, system_prompt: `You are ${name}.`, ...config },
    ...extra,
  });
  expect([200, 201], r.text).toContain(r.status);
  return obj(r.body) as Obj & { id: string; name: string };
}

type GNode = { id: string; type: string; data: Obj };
type GEdge = { id: string; source: string; target: string; sourceHandle?: string };
const graph = (nodes: GNode[], pairs: [string, string, string?][]) => ({
  nodes,
  edges: pairs.map(([s, t, h], i): GEdge => ({ id: `e${i}`, source: s, target: t, ...(h ? { sourceHandle: h } : {}) })),
});
/** start → transform (a JSONata string literal) → output. */
const markerGraph = (marker: string) =>
  graph(
    [
      { id: 'start', type: 'start', data: {} },
      { id: 't', type: 'transform', data: { expression: `"${marker}"` } },
      { id: 'out', type: 'output', data: {} },
    ],
    [
      ['start', 't'],
      ['t', 'out'],
    ],
  );
const humanGraph = (data: Obj = {}) =>
  graph(
    [
      { id: 'start', type: 'start', data: {} },
      { id: 'h', type: 'human', data: { title: 'Approve?', prompt: 'Approve?', ...data } },
      { id: 't', type: 'transform', data: { expression: '"after-human"' } },
      { id: 'out', type: 'output', data: {} },
    ],
    [
      ['start', 'h'],
      ['h', 't'],
      ['t', 'out'],
    ],
  );

async function createPathway(ws: Ws, name: string, body: Obj = {}) {
  const r = await app.post('/v1/pathways', ws.key, { name, ...body }, ws.brainHeaders);
  expect([200, 201], r.text).toContain(r.status);
  const p = obj(r.body);
  expect(typeof p.id).toBe('string');
  return p as Obj & { id: string };
}

async function jobStatus(ws: Ws, jobId: string) {
  const r = await app.get(`/v1/jobs/${jobId}/status`, ws.key);
  expect(r.status, r.text).toBe(200);
  return obj(r.body);
}
async function waitForJob(
  ws: Ws,
  jobId: string,
  until: (s: string) => boolean = (s) => s === 'completed' || s === 'failed',
  timeoutMs = 30_000,
) {
  const started = Date.now();
  for (;;) {
    const job = await jobStatus(ws, jobId);
    expect(JOB_STATUSES).toContain(job.status);
    if (until(String(job.status))) return job;
    if (Date.now() - started > timeoutMs) throw new Error(`job ${jobId} still ${String(job.status)}`);
    await sleep(100);
  }
}
async function invoke(ws: Ws, neuronId: string, body: Obj) {
  const r = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, body);
  expect([200, 202], r.text).toContain(r.status);
  return obj(r.body);
}
async function interventionsOf(ws: Ws, jobId: string) {
  const r = await app.get(`/v1/interventions?job_id=${jobId}`, ws.key, ws.brainHeaders);
  expect(r.status, r.text).toBe(200);
  return itemsOf(r.body);
}
async function postMessage(ws: Ws, traceId: string, content: string, bearer = ws.key) {
  const r = await app.post(`/v1/traces/${traceId}/messages`, bearer, { content });
  expect([200, 201], r.text).toContain(r.status);
  return obj(obj(r.body).engram);
}

// ───────────────────────────── Authentication, errors, versioning ─────────────────────────────

describe('authentication and error bodies', () => {
  it('routes without credentials answer 401 AUTH_REQUIRED with exactly { message, code }', async () => {
    const id = randomUUID();
    const routes: [string, string][] = [
      ['GET', '/v1/traces'],
      ['GET', `/v1/traces/${id}`],
      ['GET', `/v1/traces/${id}/messages`],
      ['POST', `/v1/traces/${id}/messages`],
      ['GET', '/v1/pathways'],
      ['POST', '/v1/pathways'],
      ['GET', `/v1/pathways/${id}`],
      ['POST', '/v1/pathways/validate'],
      ['POST', '/v1/pathways/compile'],
      ['GET', '/v1/neurons'],
      ['POST', '/v1/neurons'],
      ['GET', `/v1/neurons/${id}`],
      ['POST', `/v1/neurons/${id}/invoke`],
      ['GET', '/v1/reflexes'],
      ['POST', '/v1/reflexes'],
      ['GET', '/v1/jobs'],
      ['POST', '/v1/jobs'],
      ['GET', `/v1/jobs/${id}/status`],
      ['GET', `/v1/jobs/${id}/stream`],
      ['POST', `/v1/jobs/${id}/cancel`],
      ['GET', '/v1/interventions'],
      ['GET', '/v1/config/models'],
      ['GET', '/v1/session/context'],
    ];
    for (const [method, path] of routes) {
      const r = await app.request(method, path, method === 'POST' ? { body: {} } : {});
      expect(r.status, `${method} ${path}`).toBe(401);
      expectError(r, 401, 'AUTH_REQUIRED');
    }
    const bad = await app.get('/v1/traces', 'ctx_not-a-real-key');
    expectError(bad, 401, 'AUTH_REQUIRED');
  });

  it('unknown resources give 404 NOT_FOUND with exactly { message, code }', async () => {
    const ws = await buildWorkspace(app);
    const id = randomUUID();
    for (const path of [
      `/v1/traces/${id}`,
      `/v1/traces/${id}/messages`,
      `/v1/pathways/${id}`,
      `/v1/neurons/${id}`,
      `/v1/reflexes/${id}`,
      `/v1/jobs/${id}/status`,
      `/v1/interventions/${id}`,
    ]) {
      const r = await app.get(path, ws.key, ws.brainHeaders);
      expect(r.status, path).toBe(404);
      expectError(r, 404, 'NOT_FOUND');
    }
  });

  it('a resource of another workspace is a 404 on every family', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const traceId = randomUUID();
    await postMessage(ws, traceId, 'mine');
    const n = await createNeuron(ws, 'private-neuron');
    const p = await createPathway(ws, 'private-pathway', { pathway_graph: markerGraph('x') });
    const rf = await app.post('/v1/reflexes', ws.key, {
      name: 'private-reflex',
      type: 'effector',
      scope: 'workspace',
      metadata: { handler: 'calculator' },
    });
    expect([200, 201]).toContain(rf.status);
    llm.setDefault(() => ({ text: 'ok' }));
    const job = await invoke(ws, n.id, { message: 'hi' });
    const checks: TestResponse[] = [
      await app.get(`/v1/traces/${traceId}`, other.key),
      await app.get(`/v1/traces/${traceId}/messages`, other.key),
      await app.get(`/v1/neurons/${n.id}`, other.key),
      await app.put(`/v1/neurons/${n.id}`, other.key, { description: 'x' }),
      await app.del(`/v1/neurons/${n.id}`, other.key),
      await app.post(`/v1/neurons/${n.id}/invoke`, other.key, { message: 'x' }),
      await app.get(`/v1/pathways/${p.id}`, other.key, other.brainHeaders),
      await app.put(`/v1/pathways/${p.id}`, other.key, { name: 'stolen' }, other.brainHeaders),
      await app.del(`/v1/pathways/${p.id}`, other.key, other.brainHeaders),
      await app.get(`/v1/reflexes/${String(obj(rf.body).id)}`, other.key),
      await app.del(`/v1/reflexes/${String(obj(rf.body).id)}`, other.key),
      await app.get(`/v1/jobs/${String(job.job_id)}/status`, other.key),
      await app.post(`/v1/jobs/${String(job.job_id)}/cancel`, other.key),
    ];
    checks.forEach((r, i) => {
      expect(r.status, `check ${i}: ${r.text}`).toBe(404);
      expectError(r, 404, 'NOT_FOUND');
    });
    // SPEC-SILENT: trace ids are namespaced per workspace, so another workspace posting to the
    // same trace id creates its own trace and never touches (or streams into) this one.
    const intrude = await app.post(`/v1/traces/${traceId}/messages`, other.key, { content: 'intrude' });
    expect([200, 201, 404]).toContain(intrude.status);
    const mine = arr(obj((await app.get(`/v1/traces/${traceId}/messages`, ws.key)).body).engrams);
    expect(mine.map((e) => obj(e.content).content)).toEqual(['mine']);
    expect(obj(obj((await app.get(`/v1/traces/${traceId}`, ws.key)).body).trace).message_count).toBe(1);
    expect((await app.get(`/v1/jobs/${String(job.job_id)}/stream`, other.key)).status).toBe(404);
    expect(
      (
        await readSse(`${app.url}/v1/traces/${traceId}/events`, {
          headers: auth(other),
          timeoutMs: 1_000,
          until: () => true,
        })
      ).status,
    ).not.toBe(500);
    // Another workspace's brain in X-Brain-Id is not usable either.
    const list = await app.get('/v1/pathways', other.key, ws.brainHeaders);
    expect([403, 404]).toContain(list.status);
    await waitForJob(ws, String(job.job_id));
  });

  it('(brain) routes without X-Brain-Id give 400 VALIDATION_ERROR', async () => {
    const ws = await buildWorkspace(app);
    expectError(await app.get('/v1/pathways', ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.post('/v1/pathways', ws.key, { name: 'no-brain' }), 400, 'VALIDATION_ERROR');
    expectError(await app.get('/v1/neurons', ws.key), 400, 'VALIDATION_ERROR');
    // X-Brain-Id must be a UUID.
    expectError(await app.get('/v1/neurons', ws.key, { 'x-brain-id': 'not-a-uuid' }), 400, 'VALIDATION_ERROR');
    // With the header they work.
    expect((await app.get('/v1/pathways', ws.key, ws.brainHeaders)).status).toBe(200);
    expect((await app.get('/v1/neurons', ws.key, ws.brainHeaders)).status).toBe(200);
  });

  it('POST /v1/chat/:traceId is retired: always 410', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post(`/v1/chat/${randomUUID()}`, ws.key, { message: 'hello' });
    expect(r.status).toBe(410);
    expectError(r, 410);
    const empty = await app.post(`/v1/chat/${randomUUID()}`, ws.key);
    expect(empty.status).toBe(410);
  });

  it('POST /v1/chat/:traceId answers 410 even without credentials ("always 410")', async () => {
    const r = await app.post(`/v1/chat/${randomUUID()}`, undefined, { message: 'hello' });
    expect(r.status).toBe(410);
  });

  it('a flood of requests from one credential gets 429 RATE_LIMIT', async () => {
    const ws = await buildWorkspace(app);
    const statuses: number[] = [];
    let limited: TestResponse | undefined;
    // SPEC-SILENT: the default is 3,000 requests per 10 s per credential; an admin sets a key's own limit (docs/roles.md).
    const admin = await ws.jwt(['workspace_admin']);
    const key = (await app.post('/v1/api-keys', admin, { name: 'flood' })).body as { id: string; key: string };
    expect(
      (await app.patch(`/v1/api-keys/${key.id}`, admin, { rate_limit: { points: 50, duration_s: 60 } })).status,
    ).toBe(200);
    for (let batch = 0; batch < 4 && !limited; batch++) {
      const rs = await Promise.all(Array.from({ length: 40 }, () => app.get('/v1/config/models', key.key)));
      for (const r of rs) {
        statuses.push(r.status);
        if (r.status === 429) limited = r;
      }
    }
    expect(limited, `statuses: ${[...new Set(statuses)].join(',')}`).toBeDefined();
    expectError(limited!, 429, 'RATE_LIMIT');
    // Another credential is not affected.
    const other = await buildWorkspace(app);
    expect((await app.get('/v1/config/models', other.key)).status).toBe(200);
  });
});

// ─────────────────────────────────── Config and health ───────────────────────────────────

describe('config and health', () => {
  it('GET /v1/health and /health unauthenticated: { status: healthy, version }', async () => {
    for (const path of ['/v1/health', '/health']) {
      const r = await app.get(path);
      expect(r.status, path).toBe(200);
      const b = obj(r.body);
      expect(Object.keys(b).sort()).toEqual(['status', 'version']);
      expect(b.status).toBe('healthy');
      expect(typeof b.version).toBe('string');
      expect(String(b.version).length).toBeGreaterThan(0);
    }
    const ws = await buildWorkspace(app);
    const withKey = await app.get('/v1/health', ws.key);
    expect(withKey.status).toBe(200);
    expect(obj(withKey.body)).toMatchObject({ status: 'healthy', version: expect.any(String) });
  });

  it('GET /v1/config/models: { models: [{ model, provider }] }', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.get('/v1/config/models', ws.key);
    expect(r.status).toBe(200);
    const models = arr(obj(r.body).models);
    expect(models.length).toBeGreaterThan(0);
    for (const m of models) {
      expect(typeof m.model).toBe('string');
      expect(typeof m.provider).toBe('string');
    }
  });

  it('GET /v1/session/context answers a JSON object for an API key and a JWT', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.get('/v1/session/context', ws.key);
    expect(r.status).toBe(200);
    obj(r.body);
    const j = await app.get('/v1/session/context', await ws.jwt(['member']));
    expect(j.status).toBe(200);
    obj(j.body);
  });
});

// ───────────────────────────────────────── Traces ─────────────────────────────────────────

describe('traces and engrams', () => {
  it('POST messages creates the trace and returns { engram } with the Engram fields', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    const r = await app.post(`/v1/traces/${traceId}/messages`, ws.key, {
      content: 'Hello there',
      metadata: { k: 'v' },
    });
    expect([200, 201]).toContain(r.status);
    expect(Object.keys(obj(r.body))).toEqual(['engram']);
    const e = obj(obj(r.body).engram);
    for (const f of [
      'id',
      'workspace_id',
      'created_at',
      'content',
      'content_hash',
      'metadata',
      'source_type',
      'source_id',
      'target_type',
      'target_id',
      'trace_id',
      'trace_type',
    ]) {
      expect(e, f).toHaveProperty(f);
    }
    expect(e.id).toMatch(UUID_RE);
    expect(e.workspace_id).toBe(ws.workspaceId);
    expect(isIso(e.created_at)).toBe(true);
    expect(e.content).toEqual({ type: 'human', content: 'Hello there' });
    expect(typeof e.content_hash).toBe('string');
    expect(obj(e.metadata)).toMatchObject({ k: 'v' });
    expect(e.source_type).toBe('user');
    expect(typeof e.source_id).toBe('string');
    expect(e.target_type === null || typeof e.target_type === 'string').toBe(true);
    expect(e.target_id === null || typeof e.target_id === 'string').toBe(true);
    expect(e.trace_id).toBe(traceId);
    expect(e.trace_type).toBe('thread');

    const t = await app.get(`/v1/traces/${traceId}`, ws.key);
    expect(t.status).toBe(200);
    expect(Object.keys(obj(t.body))).toEqual(['trace']);
    const trace = obj(obj(t.body).trace);
    for (const f of [
      'id',
      'trace_id',
      'tenant_id',
      'user_id',
      'api_key_id',
      'created_at',
      'updated_at',
      'message_count',
      'cost_summary',
    ])
      expect(trace, f).toHaveProperty(f);
    expect(typeof trace.id).toBe('string');
    expect(trace.trace_id).toBe(traceId);
    expect(trace.tenant_id).toBe(ws.workspaceId);
    expect(isIso(trace.created_at)).toBe(true);
    expect(isIso(trace.updated_at)).toBe(true);
    expect(trace.message_count).toBe(1);
    expect(typeof trace.api_key_id).toBe('string');
    const cost = obj(trace.cost_summary);
    for (const f of ['total_cost_usd', 'total_tokens', 'input_tokens', 'output_tokens'])
      expect(typeof cost[f], f).toBe('number');
  });

  it('a trace created through a JWT carries user_id = subject (UUID) and api_key_id null', async () => {
    const ws = await buildWorkspace(app);
    const sub = randomUUID();
    const jwt = await ws.jwt(['member'], sub);
    const traceId = randomUUID();
    const e = await postMessage(ws, traceId, 'from a session', jwt);
    expect(e.source_type).toBe('user');
    const trace = obj(obj((await app.get(`/v1/traces/${traceId}`, jwt)).body).trace);
    expect(trace.user_id).toBe(sub);
    expect(trace.api_key_id).toBeNull();
  });

  it("API key traces: api_key_id is the key id; user_id is a UUID string (the key's creator)", async () => {
    const ws = await buildWorkspace(app);
    const sub = randomUUID();
    const created = await app.post('/v1/api-keys', await ws.jwt(['workspace_admin'], sub), { name: 'user key' });
    expect(created.status).toBe(201);
    const key = obj(created.body);
    const traceId = randomUUID();
    await postMessage(ws, traceId, 'from a user key', String(key.key));
    const trace = obj(obj((await app.get(`/v1/traces/${traceId}`, ws.key)).body).trace);
    expect(trace.api_key_id).toBe(key.id);
    // Spec: user_id is "string (UUID)". SPEC-SILENT: the bootstrap key (created by no user) gives null.
    expect(trace.user_id).toBe(sub);
  });

  it('key management accepts a JWT only (Authentication rule 6)', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post('/v1/api-keys', ws.key, { name: 'nope' });
    expect([401, 403]).toContain(r.status);
    expectError(r, r.status);
  });

  it('messages are returned in API order, unlimited by default, and limit caps them', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    for (let i = 0; i < 25; i++) await postMessage(ws, traceId, `m${i}`);
    const all = await app.get(`/v1/traces/${traceId}/messages`, ws.key);
    expect(all.status).toBe(200);
    expect(Object.keys(obj(all.body))).toEqual(['engrams']);
    const engrams = arr(obj(all.body).engrams);
    expect(engrams).toHaveLength(25);
    expect(engrams.map((e) => obj(e.content).content)).toEqual(Array.from({ length: 25 }, (_, i) => `m${i}`));
    const three = arr(obj((await app.get(`/v1/traces/${traceId}/messages?limit=3`, ws.key)).body).engrams);
    expect(three).toHaveLength(3);
    const trace = obj(obj((await app.get(`/v1/traces/${traceId}`, ws.key)).body).trace);
    expect(trace.message_count).toBe(25);
  });

  it('trace errors: 404 unknown, 400 invalid id format, 400 missing content', async () => {
    const ws = await buildWorkspace(app);
    expectError(await app.get(`/v1/traces/${randomUUID()}`, ws.key), 404, 'NOT_FOUND');
    expectError(await app.get(`/v1/traces/${randomUUID()}/messages`, ws.key), 404, 'NOT_FOUND');
    expectError(await app.get('/v1/traces/not-a-valid-id!', ws.key), 400, 'VALIDATION_ERROR');
    const traceId = randomUUID();
    expectError(await app.post(`/v1/traces/${traceId}/messages`, ws.key, {}), 400, 'VALIDATION_ERROR');
    expectError(await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 42 }), 400, 'VALIDATION_ERROR');
    // A failed add does not create the trace.
    expectError(await app.get(`/v1/traces/${traceId}`, ws.key), 404, 'NOT_FOUND');
  });

  it('GET /v1/traces: { traces, total, limit, offset, has_more } with default limit 20', async () => {
    const ws = await buildWorkspace(app);
    const ids = Array.from({ length: 21 }, () => randomUUID());
    for (const id of ids) await postMessage(ws, id, `hello ${id}`);
    const r = await app.get('/v1/traces', ws.key);
    expect(r.status).toBe(200);
    const b = obj(r.body);
    expect(Object.keys(b).sort()).toEqual(['has_more', 'limit', 'offset', 'total', 'traces']);
    expect(b).toMatchObject({ total: 21, limit: 20, offset: 0, has_more: true });
    const traces = arr(b.traces);
    expect(traces).toHaveLength(20);
    for (const t of traces) {
      for (const f of [
        'id',
        'trace_id',
        'tenant_id',
        'user_id',
        'api_key_id',
        'synapse_id',
        'created_at',
        'updated_at',
        'message_count',
        'cost_summary',
      ])
        expect(t, f).toHaveProperty(f);
    }
    const page2 = obj((await app.get('/v1/traces?limit=20&offset=20', ws.key)).body);
    expect(page2).toMatchObject({ total: 21, limit: 20, offset: 20, has_more: false });
    expect(arr(page2.traces)).toHaveLength(1);
    const allIds = [...traces, ...arr(page2.traces)].map((t) => t.trace_id);
    expect(new Set(allIds)).toEqual(new Set(ids));
  });

  it('GET /v1/traces filters: search on trace_id, created_after/before, sort and order', async () => {
    const ws = await buildWorkspace(app);
    const a = randomUUID();
    const b = randomUUID();
    const c = randomUUID();
    await postMessage(ws, a, 'one');
    await postMessage(ws, b, 'two');
    await postMessage(ws, b, 'two again');
    await postMessage(ws, c, 'three');
    await postMessage(ws, c, 'three again');
    await postMessage(ws, c, 'three more');
    const search = obj((await app.get(`/v1/traces?search=${b.slice(0, 13)}`, ws.key)).body);
    expect(arr(search.traces).map((t) => t.trace_id)).toEqual([b]);
    const asc = obj((await app.get('/v1/traces?sort=message_count&order=asc', ws.key)).body);
    expect(arr(asc.traces).map((t) => t.trace_id)).toEqual([a, b, c]);
    expect(arr(asc.traces).map((t) => t.message_count)).toEqual([1, 2, 3]);
    const desc = obj((await app.get('/v1/traces?sort=created_at&order=desc', ws.key)).body);
    expect(arr(desc.traces).map((t) => t.trace_id)).toEqual([c, b, a]);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const past = new Date(Date.now() - 3_600_000).toISOString();
    expect(obj((await app.get(`/v1/traces?created_after=${future}`, ws.key)).body).total).toBe(0);
    expect(obj((await app.get(`/v1/traces?created_after=${past}`, ws.key)).body).total).toBe(3);
    expect(obj((await app.get(`/v1/traces?created_before=${past}`, ws.key)).body).total).toBe(0);
    const limited = obj((await app.get('/v1/traces?limit=2', ws.key)).body);
    expect(limited).toMatchObject({ total: 3, limit: 2, has_more: true });
  });

  it('GET /v1/traces?neuron_id needs brain scope; list items carry synapse_id (the receptor UUID)', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'tracer');
    llm.setDefault(() => ({ text: 'reply' }));
    const inv = await invoke(ws, n.id, { message: 'hello neuron' });
    await waitForJob(ws, String(inv.job_id));
    expectError(await app.get(`/v1/traces?neuron_id=${n.id}`, ws.key), 400, 'VALIDATION_ERROR');
    const r = await app.get(`/v1/traces?neuron_id=${n.id}`, ws.key, ws.brainHeaders);
    expect(r.status).toBe(200);
    const traces = arr(obj(r.body).traces);
    expect(traces).toHaveLength(1);
    // SPEC-SILENT/ambiguous: synapse_id is "present on list items" (the key is there); a run
    // started by neuron invoke (not by a receptor fire) has no receptor, so it reads null.
    expect(traces[0]).toHaveProperty('synapse_id');
    expect(traces[0].synapse_id === null || UUID_RE.test(String(traces[0].synapse_id))).toBe(true);
    expect(obj((await app.get(`/v1/traces?receptor_id=${randomUUID()}`, ws.key)).body).total).toBe(0);
  });

  it('after the first assistant reply the trace has a title; a manual title overrides it (search matches it)', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'titler');
    llm.setDefault(() => ({ text: 'the reply' }));
    const traceId = randomUUID();
    const inv = await invoke(ws, n.id, { message: 'Plan a trip to Lisbon', trace_id: traceId });
    expect(inv.user_engram_id).toMatch(UUID_RE);
    await waitForJob(ws, String(inv.job_id));
    let trace = obj(obj((await app.get(`/v1/traces/${traceId}`, ws.key)).body).trace);
    for (let i = 0; i < 30 && !trace.title; i++) {
      await sleep(100);
      trace = obj(obj((await app.get(`/v1/traces/${traceId}`, ws.key)).body).trace);
    }
    expect(typeof trace.title).toBe('string');
    expect(String(trace.title).length).toBeGreaterThan(0);
    expect(trace.message_count).toBe(2);
    // SPEC-SILENT: the manual title route is PATCH /v1/traces/:id { title } (docs/decisions.md).
    const p = await app.patch(`/v1/traces/${traceId}`, ws.key, { title: 'Lisbon holiday' });
    expect(p.status).toBe(200);
    const inv2 = await invoke(ws, n.id, { message: 'and Porto?', trace_id: traceId });
    await waitForJob(ws, String(inv2.job_id));
    trace = obj(obj((await app.get(`/v1/traces/${traceId}`, ws.key)).body).trace);
    expect(trace.title).toBe('Lisbon holiday');
    expect(trace.message_count).toBe(4);
    const found = obj((await app.get('/v1/traces?search=holiday', ws.key)).body);
    expect(arr(found.traces).map((t) => t.trace_id)).toEqual([traceId]);
    const msgs = arr(obj((await app.get(`/v1/traces/${traceId}/messages`, ws.key)).body).engrams);
    expect(msgs.map((m) => m.source_type)).toEqual(['user', 'neuron', 'user', 'neuron']);
    expect(msgs[0].id).toBe(inv.user_engram_id);
  });
});

// ───────────────────────────────────────── Events ─────────────────────────────────────────

describe('SSE events', () => {
  it('trace events: text/event-stream, id:/data: lines, resume with after= and Last-Event-ID', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    await postMessage(ws, traceId, 'first');
    const url = `${app.url}/v1/traces/${traceId}/events`;
    const live = await readSse(url, {
      headers: auth(ws),
      timeoutMs: 10_000,
      until: (ev) => ev.length >= 3,
      onOpen: async () => {
        await postMessage(ws, traceId, 'second');
        await postMessage(ws, traceId, 'third');
      },
    });
    expect(live.status).toBe(200);
    expect(live.contentType).toMatch(/^text\/event-stream/);
    expect(live.events.length).toBeGreaterThanOrEqual(2);
    for (const e of live.events) {
      expect(e.id).toMatch(CURSOR_RE);
      expect(() => JSON.parse(e.data) as unknown).not.toThrow();
    }
    const first = live.events[0].id!;
    const expectedAfter = live.events.slice(1).map((e) => e.id);
    const viaAfter = await readSse(`${url}?after=${first}`, {
      headers: auth(ws),
      timeoutMs: 3_000,
      until: (ev) => ev.length >= expectedAfter.length,
    });
    expect(viaAfter.events.map((e) => e.id).slice(0, expectedAfter.length)).toEqual(expectedAfter);
    const viaHeader = await readSse(url, {
      headers: { ...auth(ws), 'last-event-id': first },
      timeoutMs: 3_000,
      until: (ev) => ev.length >= expectedAfter.length,
    });
    expect(viaHeader.events.map((e) => e.id).slice(0, expectedAfter.length)).toEqual(expectedAfter);
  });

  it('trace events for a session user (JWT) need X-Brain-Id; without credentials 401', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    const jwt = await ws.jwt(['member']);
    await postMessage(ws, traceId, 'hi', jwt);
    const url = `${app.url}/v1/traces/${traceId}/events`;
    const noBrain = await readSse(url, { headers: { authorization: `Bearer ${jwt}` }, timeoutMs: 3_000 });
    expect(noBrain.status).toBe(400);
    const withBrain = await readSse(url, {
      headers: { authorization: `Bearer ${jwt}`, ...ws.brainHeaders },
      timeoutMs: 1_000,
      until: () => true,
    });
    expect(withBrain.status).toBe(200);
    const anon = await readSse(url, { timeoutMs: 3_000 });
    expect(anon.status).toBe(401);
    const missing = await readSse(`${app.url}/v1/traces/${randomUUID()}/events`, {
      headers: auth(ws),
      timeoutMs: 3_000,
    });
    expect(missing.status).toBe(404);
  });

  it('job stream: id: <cursor> then data: <json> lines, ends after complete; after= resumes', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'streamer');
    llm.setDefault(() => ({ chunks: ['one ', 'two ', 'three'] }));
    const inv = await invoke(ws, n.id, { message: 'count', stream: true });
    expect(inv.status).toBe('pending');
    const jobId = String(inv.job_id);
    const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, { headers: auth(ws), timeoutMs: 30_000 });
    expect(sse.status).toBe(200);
    expect(sse.contentType).toMatch(/^text\/event-stream/);
    expect(sse.ended).toBe(true);
    const last = sse.events.at(-1)!;
    expect(last.event === 'complete' || dataOf(last).type === 'complete').toBe(true);
    for (const e of sse.events) expect(e.id).toMatch(CURSOR_RE);

    // Raw wire format of a finished stream.
    const raw = await fetch(`${app.url}/v1/jobs/${jobId}/stream`, { headers: auth(ws) });
    const text = await raw.text();
    const blocks = text
      .split('\n\n')
      .map((b) => b.trim())
      .filter((b) => b && !b.startsWith(':'));
    expect(blocks.length).toBe(sse.events.length);
    for (const b of blocks) expect(b).toMatch(/^id: \d+-\d+\ndata: .+$/);

    const k = 1;
    const rest = await readSse(`${app.url}/v1/jobs/${jobId}/stream?after=${sse.events[k].id}`, {
      headers: auth(ws),
      timeoutMs: 10_000,
    });
    expect(rest.ended).toBe(true);
    expect(rest.events.map((e) => e.id)).toEqual(sse.events.slice(k + 1).map((e) => e.id));
    const job = await waitForJob(ws, jobId);
    expect(job.status).toBe('completed');
  });

  it('job stream ends after an error terminal event when the run is cancelled', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'slow');
    llm.setDefault(() => ({ chunks: Array.from({ length: 40 }, (_, i) => `w${i} `), delayMsPerChunk: 100 }));
    const inv = await invoke(ws, n.id, { message: 'slowly' });
    const jobId = String(inv.job_id);
    let cancelled: Promise<TestResponse> | undefined;
    const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
      headers: auth(ws),
      timeoutMs: 30_000,
      until: (ev) => {
        if (!cancelled && ev.length >= 2) cancelled = app.post(`/v1/jobs/${jobId}/cancel`, ws.key);
        return false;
      },
    });
    expect(cancelled).toBeDefined();
    expect((await cancelled!).status).toBe(200);
    expect(sse.ended).toBe(true);
    const last = sse.events.at(-1)!;
    expect(last.event === 'error' || dataOf(last).type === 'error').toBe(true);
    const job = await waitForJob(ws, jobId);
    expect(job.status).toBe('failed');
    expect(typeof job.failedReason).toBe('string');
    expectError(await app.post(`/v1/jobs/${jobId}/cancel`, ws.key), 400, 'VALIDATION_ERROR');
  });
});

// ───────────────────────────────────────── Neurons ─────────────────────────────────────────

describe('neurons', () => {
  it('create: name normalized to a slug, defaults is_active true and scope brain', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post('/v1/neurons', ws.key, {
      name: 'My Helper Bot',
      brain_id: ws.brainId,
      description: 'helps',
      neuron_config: { model: MODEL, system_prompt: 'Purpose: help', temperature: 0.2, max_tokens: 100 },
    });
    expect([200, 201]).toContain(r.status);
    const n = obj(r.body);
    expect(n.id).toMatch(UUID_RE);
    expect(n.name).toBe('my-helper-bot');
    expect(n.brain_id).toBe(ws.brainId);
    expect(n.description).toBe('helps');
    expect(n.is_active).toBe(true);
    expect(n.scope).toBe('brain');
    expect(obj(n.neuron_config)).toMatchObject({
      model: MODEL,
      system_prompt: 'Purpose: help',
      temperature: 0.2,
      max_tokens: 100,
    });
    const got = await app.get(`/v1/neurons/${String(n.id)}`, ws.key);
    expect(got.status).toBe(200);
    expect(obj(got.body)).toMatchObject({ id: n.id, name: 'my-helper-bot', is_active: true, scope: 'brain' });
    // name / slug segments resolve too.
    const bySlug = await app.get('/v1/neurons/my-helper-bot', ws.key, ws.brainHeaders);
    expect(bySlug.status).toBe(200);
    expect(obj(bySlug.body).id).toBe(n.id);
  });

  it('create validation: name and brain_id required; engagement_resource_id rejected', async () => {
    const ws = await buildWorkspace(app);
    expectError(await app.post('/v1/neurons', ws.key, { brain_id: ws.brainId }), 400, 'VALIDATION_ERROR');
    expectError(await app.post('/v1/neurons', ws.key, { name: 'no-brain' }), 400, 'VALIDATION_ERROR');
    expectError(
      await app.post('/v1/neurons', ws.key, { name: 'bad-scope', brain_id: ws.brainId, scope: 'galaxy' }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post('/v1/neurons', ws.key, {
        name: 'eng',
        brain_id: ws.brainId,
        neuron_config: { model: MODEL, engagement_resource_id: randomUUID() },
      }),
      400,
      'VALIDATION_ERROR',
    );
    const n = await createNeuron(ws, 'invokee');
    expectError(
      await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: 'x', engagement_resource_id: randomUUID() }),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('GET /v1/neurons (brain): default limit 20, search, limit/offset, sortBy name', async () => {
    const ws = await buildWorkspace(app);
    for (let i = 0; i < 22; i++) await createNeuron(ws, `bulk-${String(i).padStart(2, '0')}`);
    await createNeuron(ws, 'special-zebra', {}, { description: 'striped' });
    const all = await app.get('/v1/neurons', ws.key, ws.brainHeaders);
    expect(all.status).toBe(200);
    expect(itemsOf(all.body)).toHaveLength(20);
    const search = itemsOf((await app.get('/v1/neurons?search=zebra', ws.key, ws.brainHeaders)).body);
    expect(search.map((n) => n.name)).toEqual(['special-zebra']);
    const byDesc = itemsOf((await app.get('/v1/neurons?search=striped', ws.key, ws.brainHeaders)).body);
    expect(byDesc.map((n) => n.name)).toEqual(['special-zebra']);
    const sorted = itemsOf(
      (await app.get('/v1/neurons?sortBy=name&sortDirection=asc&limit=3&offset=1', ws.key, ws.brainHeaders)).body,
    );
    expect(sorted.map((n) => n.name)).toEqual(['bulk-01', 'bulk-02', 'bulk-03']);
    const desc = itemsOf(
      (await app.get('/v1/neurons?sortBy=name&sortDirection=desc&limit=1', ws.key, ws.brainHeaders)).body,
    );
    expect(desc.map((n) => n.name)).toEqual(['special-zebra']);
  });

  it('versions: ?version returns a snapshot; invalid 400, missing 404; promote moves it to head', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'versioned', { system_prompt: 'v1 prompt' });
    const u = await app.put(`/v1/neurons/${n.id}`, ws.key, {
      neuron_config: { model: MODEL, system_prompt: 'v2 prompt' },
      description: 'second',
    });
    expect(u.status).toBe(200);
    expect(obj(obj(u.body).neuron_config).system_prompt).toBe('v2 prompt');
    const head = obj((await app.get(`/v1/neurons/${n.id}`, ws.key)).body);
    expect(obj(head.neuron_config).system_prompt).toBe('v2 prompt');
    const v1 = await app.get(`/v1/neurons/${n.id}?version=1`, ws.key);
    expect(v1.status).toBe(200);
    expect(obj(obj(v1.body).neuron_config).system_prompt).toBe('v1 prompt');
    expectError(await app.get(`/v1/neurons/${n.id}?version=abc`, ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.get(`/v1/neurons/${n.id}?version=-1`, ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.get(`/v1/neurons/${n.id}?version=999`, ws.key), 404, 'NOT_FOUND');
    const versions = await app.get(`/v1/neurons/${n.id}/versions`, ws.key);
    expect(versions.status).toBe(200);
    expect(itemsOf(versions.body).length).toBeGreaterThanOrEqual(2);
    const snap = await app.get(`/v1/neurons/${n.id}/versions/1`, ws.key);
    expect(snap.status).toBe(200);
    expect(JSON.stringify(snap.body)).toContain('v1 prompt');
    expectError(await app.get(`/v1/neurons/${n.id}/versions/999`, ws.key), 404, 'NOT_FOUND');
    const promote = await app.post(`/v1/neurons/${n.id}/versions/1/promote`, ws.key);
    expect([200, 201]).toContain(promote.status);
    const after = obj((await app.get(`/v1/neurons/${n.id}`, ws.key)).body);
    expect(obj(after.neuron_config).system_prompt).toBe('v1 prompt');
  });

  it('DELETE /v1/neurons/:id → { success: true } and a hard remove', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'doomed');
    const d = await app.del(`/v1/neurons/${n.id}`, ws.key);
    expect(d.status).toBe(200);
    expect(d.body).toEqual({ success: true });
    expectError(await app.get(`/v1/neurons/${n.id}`, ws.key), 404, 'NOT_FOUND');
    expectError(await app.del(`/v1/neurons/${n.id}`, ws.key), 404, 'NOT_FOUND');
    expectError(await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: 'x' }), 404, 'NOT_FOUND');
    expectError(await app.get(`/v1/neurons/${n.id}/versions`, ws.key), 404, 'NOT_FOUND');
    expectError(await app.get(`/v1/resources/neurons/${n.id}`, ws.key, ws.brainHeaders), 404, 'NOT_FOUND');
    // The name is free again.
    await createNeuron(ws, 'doomed');
  });

  it('scope: workspace needs workspace admin, core needs core admin (403 FORBIDDEN)', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'scoped');
    const member = await ws.jwt(['member']);
    expectError(await app.put(`/v1/neurons/${n.id}`, member, { scope: 'workspace' }), 403, 'FORBIDDEN');
    expectError(
      await app.put(`/v1/neurons/${n.id}`, await ws.jwt(['workspace_admin']), { scope: 'core' }),
      403,
      'FORBIDDEN',
    );
    const ok = await app.put(`/v1/neurons/${n.id}`, await ws.jwt(['workspace_admin']), { scope: 'workspace' });
    expect(ok.status).toBe(200);
    expect(obj(ok.body).scope).toBe('workspace');
    expectError(await app.put(`/v1/neurons/${n.id}`, ws.key, { scope: 'nowhere' }), 400, 'VALIDATION_ERROR');
    // Creating with those scopes follows the same rules.
    expectError(
      await app.post('/v1/neurons', member, {
        name: 'ws-wide',
        brain_id: ws.brainId,
        scope: 'workspace',
        neuron_config: { model: MODEL },
      }),
      403,
      'FORBIDDEN',
    );
    expectError(
      await app.post('/v1/neurons', await ws.jwt(['workspace_admin']), {
        name: 'core-one',
        brain_id: ws.brainId,
        scope: 'core',
        neuron_config: { model: MODEL },
      }),
      403,
      'FORBIDDEN',
    );
    const core = await app.post('/v1/neurons', await ws.jwt(['core_admin', 'workspace_admin']), {
      name: 'core-one',
      brain_id: ws.brainId,
      scope: 'core',
      neuron_config: { model: MODEL, system_prompt: 'secret charter' },
    });
    expect([200, 201]).toContain(core.status);
    expect(obj(core.body).scope).toBe('core');
  });

  it('is_active can be set by update', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'toggler');
    const off = await app.put(`/v1/neurons/${n.id}`, ws.key, { is_active: false });
    expect(off.status).toBe(200);
    expect(obj(off.body).is_active).toBe(false);
    expect(obj((await app.get(`/v1/neurons/${n.id}`, ws.key)).body).is_active).toBe(false);
  });

  it('neuron reflexes: assign, 409 when assigned, list items { id, name, type, is_active, created_at }, 404 unknowns, delete { success: true }', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'tooluser');
    const rf = obj(
      (
        await app.post('/v1/reflexes', ws.key, {
          name: 'calc',
          type: 'effector',
          scope: 'workspace',
          metadata: { handler: 'calculator' },
        })
      ).body,
    );
    const add = await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: rf.id });
    expect([200, 201]).toContain(add.status);
    expectError(await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: rf.id }), 409);
    expectError(await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: randomUUID() }), 404, 'NOT_FOUND');
    expectError(await app.post(`/v1/neurons/${randomUUID()}/reflexes`, ws.key, { reflex_id: rf.id }), 404, 'NOT_FOUND');
    expectError(await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, {}), 400, 'VALIDATION_ERROR');
    expectError(
      await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: 'not-a-uuid' }),
      400,
      'VALIDATION_ERROR',
    );
    const list = await app.get(`/v1/neurons/${n.id}/reflexes`, ws.key);
    expect(list.status).toBe(200);
    const items = arr(list.body);
    expect(items).toHaveLength(1);
    expect(Object.keys(items[0]).sort()).toEqual(['created_at', 'id', 'is_active', 'name', 'type']);
    expect(items[0]).toMatchObject({ id: rf.id, name: 'calc', type: 'effector', is_active: true });
    expect(isIso(items[0].created_at)).toBe(true);
    const del = await app.del(`/v1/neurons/${n.id}/reflexes/${String(rf.id)}`, ws.key);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect(arr((await app.get(`/v1/neurons/${n.id}/reflexes`, ws.key)).body)).toHaveLength(0);
  });
});

// ───────────────────────────────────── Invoke and jobs ─────────────────────────────────────

describe('neuron invoke and jobs', () => {
  it('invoke → { job_id, status: pending, user_engram_id }; the job reports the Job fields', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'answerer');
    llm.setDefault(() => ({ text: 'forty two', usage: { prompt_tokens: 10, completion_tokens: 3 } }));
    const inv = await invoke(ws, n.id, { message: 'What is the answer?' });
    expect(typeof inv.job_id).toBe('string');
    expect(inv.status).toBe('pending');
    expect(inv).toHaveProperty('user_engram_id');
    expect(typeof inv.user_engram_id).toBe('string');
    const jobId = String(inv.job_id);
    const job = await waitForJob(ws, jobId);
    expect(job.status).toBe('completed');
    expect(job.job_id).toBe(jobId);
    expect(typeof job.progress).toBe('number');
    expect(obj(job.result)).toBeDefined();
    expect(JSON.stringify(job.result)).toContain('forty two');
    for (const f of ['created_at', 'processed_at', 'finished_at'])
      expect(isIso(job[f]), `${f}=${String(job[f])}`).toBe(true);
    expect(Date.parse(String(job.finished_at))).toBeGreaterThanOrEqual(Date.parse(String(job.created_at)));
    expect(typeof job.current_step).toBe('string');
    expect(job.waitingFor ?? null).toBeNull();
  });

  it('invoke with data only; neuron_task_options contract (trace_type / traceType; other aliases 400)', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'optioned');
    llm.setDefault(() => ({ text: 'done' }));
    const d = await invoke(ws, n.id, { data: { q: 1 } });
    expect(d.status).toBe('pending');
    expect(d.user_engram_id === null || typeof d.user_engram_id === 'string').toBe(true);
    const snake = await invoke(ws, n.id, { message: 'a', neuron_task_options: { trace_type: 'system' } });
    const camel = await invoke(ws, n.id, { message: 'b', neuron_task_options: { traceType: 'thread' } });
    for (const body of [
      { message: 'x', neuron_task_options: { persistence: 'system' } },
      { message: 'x', neuron_task_options: { trace_type: 'bogus' } },
      { message: 'x', neuron_task_options: 'system' },
      { message: 'x', trace_id: 'not-a-uuid' },
    ]) {
      const r = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, body);
      expectError(r, 400, 'VALIDATION_ERROR');
    }
    for (const j of [d, snake, camel]) expect((await waitForJob(ws, String(j.job_id))).status).toBe('completed');
  });

  it('GET /v1/jobs: { jobs, total, limit, offset } with default limit 20 and filters', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const p = await createPathway(ws, 'lister', { pathway_graph: markerGraph('L') });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { input: { i } }, ws.brainHeaders);
      expect(r.status).toBe(202);
      ids.push(String(obj(r.body).job_id));
    }
    for (const id of ids) await waitForJob(ws, id);
    const r = await app.get('/v1/jobs', ws.key);
    expect(r.status).toBe(200);
    const b = obj(r.body);
    expect(Object.keys(b).sort()).toEqual(['jobs', 'limit', 'offset', 'total']);
    expect(b).toMatchObject({ total: 3, limit: 20, offset: 0 });
    expect(
      arr(b.jobs)
        .map((j) => j.job_id)
        .sort(),
    ).toEqual([...ids].sort());
    expect(
      obj((await app.get(`/v1/jobs?pathway_id=${p.id}&status=completed&limit=2&offset=1`, ws.key)).body),
    ).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect(arr(obj((await app.get(`/v1/jobs?pathway_id=${p.id}&limit=2&offset=1`, ws.key)).body).jobs)).toHaveLength(2);
    expect(obj((await app.get('/v1/jobs?status=failed', ws.key)).body).total).toBe(0);
    expect(obj((await app.get(`/v1/jobs?pathway_id=${randomUUID()}`, ws.key)).body).total).toBe(0);
    expect(obj((await app.get(`/v1/jobs?receptor_id=${randomUUID()}`, ws.key)).body).total).toBe(0);
    // Workspace scoped.
    expect(obj((await app.get('/v1/jobs', other.key)).body).total).toBe(0);
  });

  it('POST /v1/jobs: 200 { job_id, status: pending } for a stored or inline pathway; 400 without either', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'stored', { pathway_graph: markerGraph('stored-marker') });
    const stored = await app.post('/v1/jobs', ws.key, { pathway_id: p.id, input: { a: 1 } }, ws.brainHeaders);
    expect(stored.status).toBe(200);
    expect(obj(stored.body)).toMatchObject({ job_id: expect.any(String), status: 'pending' });
    const inline = await app.post(
      '/v1/jobs',
      ws.key,
      { pathway: markerGraph('inline-marker'), data: { b: 2 } },
      ws.brainHeaders,
    );
    expect(inline.status, inline.text).toBe(200);
    expect(obj(inline.body)).toMatchObject({ job_id: expect.any(String), status: 'pending' });
    const j1 = await waitForJob(ws, String(obj(stored.body).job_id));
    expect(j1.status).toBe('completed');
    expect(JSON.stringify(j1.result)).toContain('stored-marker');
    const j2 = await waitForJob(ws, String(obj(inline.body).job_id));
    expect(j2.status).toBe('completed');
    expect(JSON.stringify(j2.result)).toContain('inline-marker');
    expectError(await app.post('/v1/jobs', ws.key, {}, ws.brainHeaders), 400, 'VALIDATION_ERROR');
    expectError(
      await app.post('/v1/jobs', ws.key, { pathway_id: 'not-a-uuid' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('cancel: unknown job 404; completed job 400 and status unchanged', async () => {
    const ws = await buildWorkspace(app);
    expectError(await app.post(`/v1/jobs/${randomUUID()}/cancel`, ws.key), 404, 'NOT_FOUND');
    const p = await createPathway(ws, 'quick', { pathway_graph: markerGraph('q') });
    const r = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, {}, ws.brainHeaders);
    const jobId = String(obj(r.body).job_id);
    expect((await waitForJob(ws, jobId)).status).toBe('completed');
    expectError(await app.post(`/v1/jobs/${jobId}/cancel`, ws.key), 400, 'VALIDATION_ERROR');
    expect((await jobStatus(ws, jobId)).status).toBe('completed');
  });
});

// ───────────────────────────────────────── Pathways ─────────────────────────────────────────

describe('pathways', () => {
  it('create and read: defaults, latest_version and version on single reads', async () => {
    const ws = await buildWorkspace(app);
    const g = markerGraph('v1');
    const design = { nodes: [{ id: 'start', position: { x: 0, y: 0 }, data: {} }], edges: [] };
    const p = await createPathway(ws, 'Onboarding Flow', {
      description: 'desc',
      pathway_graph: g,
      pathway_data: design,
    });
    expect(p).toMatchObject({ name: 'Onboarding Flow', description: 'desc', is_active: true });
    expect(p.pathway_graph).toEqual(g);
    expect(p.pathway_data).toEqual(design);
    const got = await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders);
    expect(got.status).toBe(200);
    const b = obj(got.body);
    expect(b).toMatchObject({ id: p.id, name: 'Onboarding Flow', is_active: true });
    expect(typeof b.latest_version).toBe('number');
    expect(typeof b.version).toBe('number');
    expect(b.version).toBe(b.latest_version);
    expectError(
      await app.post('/v1/pathways', ws.key, { description: 'no name' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post('/v1/pathways', ws.key, { name: 'bad', is_active: 'yes' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    const inactive = await createPathway(ws, 'off', { is_active: false });
    expect(inactive.is_active).toBe(false);
  });

  it('update, versions, version read and promote (a new tip entry)', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'versioned', { pathway_graph: markerGraph('first') });
    const v0 = obj((await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders)).body);
    const base = Number(v0.latest_version);
    const u = await app.put(
      `/v1/pathways/${p.id}`,
      ws.key,
      { pathway_graph: markerGraph('second'), description: 'changed' },
      ws.brainHeaders,
    );
    expect(u.status).toBe(200);
    expect(obj(u.body)).toMatchObject({ description: 'changed' });
    const v1 = obj((await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders)).body);
    expect(v1.latest_version).toBe(base + 1);
    expect(v1.pathway_graph).toEqual(markerGraph('second'));
    const versions = await app.get(`/v1/pathways/${p.id}/versions`, ws.key, ws.brainHeaders);
    expect(versions.status).toBe(200);
    expect(itemsOf(versions.body).length).toBeGreaterThanOrEqual(2);
    const old = await app.get(`/v1/pathways/${p.id}/versions/${base}`, ws.key, ws.brainHeaders);
    expect(old.status).toBe(200);
    expect(JSON.stringify(old.body)).toContain('first');
    expect(JSON.stringify(old.body)).not.toContain('second');
    expectError(await app.get(`/v1/pathways/${p.id}/versions/999`, ws.key, ws.brainHeaders), 404, 'NOT_FOUND');
    const promote = await app.post(`/v1/pathways/${p.id}/versions/${base}/promote`, ws.key, {}, ws.brainHeaders);
    expect([200, 201]).toContain(promote.status);
    const tip = obj((await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders)).body);
    expect(tip.latest_version).toBe(base + 2);
    expect(tip.version).toBe(base + 2);
    expect(tip.pathway_graph).toEqual(markerGraph('first'));
    expect(
      itemsOf((await app.get(`/v1/pathways/${p.id}/versions`, ws.key, ws.brainHeaders)).body).length,
    ).toBeGreaterThanOrEqual(3);
    // workspace_id in the promote body must match auth.
    const mismatch = await app.post(
      `/v1/pathways/${p.id}/versions/${base}/promote`,
      ws.key,
      { workspace_id: randomUUID() },
      ws.brainHeaders,
    );
    expect([400, 403]).toContain(mismatch.status);
    expectError(mismatch, mismatch.status);
  });

  it('GET /v1/pathways (brain): default limit 20, search, sortBy name, createdBy', async () => {
    const ws = await buildWorkspace(app);
    for (let i = 0; i < 21; i++) await createPathway(ws, `flow-${String(i).padStart(2, '0')}`);
    await createPathway(ws, 'zeta-special');
    const all = await app.get('/v1/pathways', ws.key, ws.brainHeaders);
    expect(all.status).toBe(200);
    expect(itemsOf(all.body)).toHaveLength(20);
    expect(
      itemsOf((await app.get('/v1/pathways?search=zeta', ws.key, ws.brainHeaders)).body).map((p) => p.name),
    ).toEqual(['zeta-special']);
    const sorted = itemsOf(
      (await app.get('/v1/pathways?sortBy=name&sortDirection=asc&limit=2&offset=2', ws.key, ws.brainHeaders)).body,
    );
    expect(sorted.map((p) => p.name)).toEqual(['flow-02', 'flow-03']);
    expect(
      itemsOf((await app.get(`/v1/pathways?createdBy=${randomUUID()}`, ws.key, ws.brainHeaders)).body),
    ).toHaveLength(0);
    const jwtSub = randomUUID();
    const jwt = await ws.jwt(['workspace_admin'], jwtSub);
    const mine = await app.post('/v1/pathways', jwt, { name: 'by-a-user' }, ws.brainHeaders);
    expect([200, 201]).toContain(mine.status);
    expect(
      itemsOf((await app.get(`/v1/pathways?createdBy=${jwtSub}`, ws.key, ws.brainHeaders)).body).map((p) => p.name),
    ).toEqual(['by-a-user']);
    // Brain scoped: another brain of the same workspace does not list them.
    const other = await buildWorkspace(app);
    expect(itemsOf((await app.get('/v1/pathways', other.key, other.brainHeaders)).body)).toHaveLength(0);
  });

  it('DELETE /v1/pathways/:id removes it', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'gone');
    const d = await app.del(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders);
    expect(d.status).toBe(200);
    expectError(await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders), 404, 'NOT_FOUND');
    expectError(await app.del(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders), 404, 'NOT_FOUND');
  });

  it('execute: 202 { job_id, status: pending }; pathway_version selects a stored version', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'runner', { pathway_graph: markerGraph('alpha-marker') });
    const base = Number(obj((await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders)).body).latest_version);
    await app.put(`/v1/pathways/${p.id}`, ws.key, { pathway_graph: markerGraph('beta-marker') }, ws.brainHeaders);
    const head = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { input: { x: 1 } }, ws.brainHeaders);
    expect(head.status).toBe(202);
    expect(obj(head.body)).toMatchObject({ job_id: expect.any(String), status: 'pending' });
    const old = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { pathway_version: base }, ws.brainHeaders);
    expect(old.status).toBe(202);
    const jh = await waitForJob(ws, String(obj(head.body).job_id));
    const jo = await waitForJob(ws, String(obj(old.body).job_id));
    expect(jh.status).toBe('completed');
    expect(JSON.stringify(jh.result)).toContain('beta-marker');
    expect(jo.status).toBe('completed');
    expect(JSON.stringify(jo.result)).toContain('alpha-marker');
    expect(JSON.stringify(jo.result)).not.toContain('beta-marker');
    expectError(
      await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { trace_id: 'nope' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    expectError(await app.post(`/v1/pathways/${randomUUID()}/execute`, ws.key, {}, ws.brainHeaders), 404, 'NOT_FOUND');
  });

  it('execute with trace_id pins the neuron engrams to that thread trace', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'pathway-worker');
    llm.setDefault((body) => ({ text: `worked on ${lastUserText(body)}` }));
    const traceId = randomUUID();
    await postMessage(ws, traceId, 'existing thread');
    const g = graph(
      [
        { id: 'start', type: 'start', data: {} },
        { id: 'n', type: 'neuron', data: { neuron_id: n.id, message: 'the task' } },
        { id: 'end', type: 'end', data: {} },
      ],
      [
        ['start', 'n'],
        ['n', 'end'],
      ],
    );
    const p = await createPathway(ws, 'with-neuron', { pathway_graph: g });
    const r = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { trace_id: traceId }, ws.brainHeaders);
    expect(r.status).toBe(202);
    expect((await waitForJob(ws, String(obj(r.body).job_id))).status).toBe('completed');
    const msgs = arr(obj((await app.get(`/v1/traces/${traceId}/messages`, ws.key)).body).engrams);
    expect(msgs.length).toBeGreaterThanOrEqual(2);
    expect(msgs[0].content).toEqual({ type: 'human', content: 'existing thread' });
    expect(msgs.some((m) => m.source_type === 'neuron' && m.source_id === n.id)).toBe(true);
  });

  it('rule 8: inactive pathway without pathway_version, or a missing brain header, fails with pathway-not-found', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'sleepy', { pathway_graph: markerGraph('sleepy-marker') });
    const base = Number(obj((await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders)).body).latest_version);
    await app.put(`/v1/pathways/${p.id}`, ws.key, { is_active: false }, ws.brainHeaders);
    const notFound = async (r: TestResponse) => {
      if (r.status === 404) {
        expectError(r, 404, 'NOT_FOUND');
        return;
      }
      expect(r.status, r.text).toBe(202);
      const job = await waitForJob(ws, String(obj(r.body).job_id));
      expect(job.status).toBe('failed');
      expect(String(job.failedReason)).toMatch(/not.?found/i);
    };
    await notFound(await app.post(`/v1/pathways/${p.id}/execute`, ws.key, {}, ws.brainHeaders));
    // A specific version of an inactive pathway still runs.
    const pinned = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { pathway_version: base }, ws.brainHeaders);
    expect(pinned.status).toBe(202);
    expect((await waitForJob(ws, String(obj(pinned.body).job_id))).status).toBe('completed');
    // Missing brain header.
    const active = await createPathway(ws, 'awake', { pathway_graph: markerGraph('awake') });
    await notFound(await app.post(`/v1/pathways/${active.id}/execute`, ws.key, {}));
    // Outside the caller's workspace.
    const other = await buildWorkspace(app);
    const r = await app.post(`/v1/pathways/${active.id}/execute`, other.key, {}, other.brainHeaders);
    expectError(r, 404, 'NOT_FOUND');
  });

  it('POST /v1/pathways/validate: { valid, errors?, warnings? }', async () => {
    const ws = await buildWorkspace(app);
    const good = await app.post('/v1/pathways/validate', ws.key, markerGraph('ok'));
    expect(good.status).toBe(200);
    const gb = obj(good.body);
    expect(Object.keys(gb).every((k) => ['valid', 'errors', 'warnings'].includes(k))).toBe(true);
    expect(gb.valid).toBe(true);
    if (gb.errors !== undefined) expect(gb.errors).toEqual([]);
    const dangling = await app.post('/v1/pathways/validate', ws.key, {
      nodes: [{ id: 'start', type: 'start', data: {} }],
      edges: [{ id: 'e1', source: 'start', target: 'ghost' }],
    });
    expect(dangling.status).toBe(200);
    const db = obj(dangling.body);
    expect(db.valid).toBe(false);
    const errors = arr(db.errors);
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(typeof e).toBe('string');
    const unreachable = obj(
      (
        await app.post('/v1/pathways/validate', ws.key, {
          nodes: [
            { id: 'start', type: 'start', data: {} },
            { id: 'out', type: 'output', data: {} },
            { id: 'island', type: 'output', data: {} },
          ],
          edges: [{ id: 'e1', source: 'start', target: 'out' }],
        })
      ).body,
    );
    expect(unreachable.valid).toBe(true);
    expect(arr(unreachable.warnings).length).toBeGreaterThan(0);
    for (const w of arr(unreachable.warnings)) expect(typeof w).toBe('string');
    const empty = await app.post('/v1/pathways/validate', ws.key, {});
    expect(empty.status).toBe(200);
    // SPEC-SILENT: an empty graph is valid with a warning (docs/decisions.md).
    expect(obj(empty.body).valid).toBe(true);
    expect(arr(obj(empty.body).warnings).length).toBeGreaterThan(0);
    expectError(await app.post('/v1/pathways/validate', ws.key, { nodes: 'nope' }), 400, 'VALIDATION_ERROR');
  });

  it('POST /v1/pathways/compile: index-based { compiled: { nodes, edges } } with -1 terminals and preview', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post('/v1/pathways/compile', ws.key, {
      pathway: markerGraph('c'),
      payload: { hello: 'world' },
    });
    expect(r.status).toBe(200);
    const b = obj(r.body);
    expect(Object.keys(b).every((k) => ['compiled', 'preview', 'errors'].includes(k))).toBe(true);
    const compiled = obj(b.compiled);
    const nodes = arr(compiled.nodes);
    const edges = compiled.edges as unknown[][];
    expect(nodes).toHaveLength(3);
    for (const n of nodes) {
      expect(typeof n.type).toBe('string');
      expect(n).toHaveProperty('data');
      // Index-based (edges are index pairs), and each node keeps the designer's id so a client can
      // match the stream's node ids to its graph.
      expect(typeof n.id).toBe('string');
    }
    expect(nodes.map((n) => n.type).sort()).toEqual(['output', 'start', 'transform']);
    expect(Array.isArray(edges)).toBe(true);
    for (const e of edges) {
      expect(Array.isArray(e)).toBe(true);
      expect(e.length === 2 || e.length === 3).toBe(true);
      expect(Number.isInteger(e[0])).toBe(true);
      expect(Number.isInteger(e[1])).toBe(true);
      expect(e[0] as number).toBeGreaterThanOrEqual(0);
      expect(e[0] as number).toBeLessThan(nodes.length);
      expect(e[1] === -1 || ((e[1] as number) >= 0 && (e[1] as number) < nodes.length)).toBe(true);
    }
    const idx = (t: string) => nodes.findIndex((n) => n.type === t);
    expect(edges).toContainEqual([idx('start'), idx('transform')]);
    expect(edges).toContainEqual([idx('transform'), idx('output')]);
    expect(edges.some((e) => e[1] === -1)).toBe(true);
    expect(obj(b.preview)).toEqual({ input: { hello: 'world' } });
    expectError(await app.post('/v1/pathways/compile', ws.key, {}), 400, 'VALIDATION_ERROR');
  });

  it('compile: if-node handles true/false and classify categories are the third edge element', async () => {
    const ws = await buildWorkspace(app);
    const g = graph(
      [
        { id: 'start', type: 'start', data: {} },
        { id: 'cond', type: 'if', data: { condition: 'input.score > 5' } },
        { id: 'hi', type: 'output', data: {} },
        { id: 'cls', type: 'classify', data: { categories: ['billing', 'support'] } },
        { id: 'b', type: 'output', data: {} },
        { id: 's', type: 'output', data: {} },
      ],
      [
        ['start', 'cond'],
        ['cond', 'hi', 'true'],
        ['cond', 'cls', 'false'],
        ['cls', 'b', 'billing'],
        ['cls', 's', 'support'],
      ],
    );
    const r = await app.post('/v1/pathways/compile', ws.key, { pathway: g });
    expect(r.status, r.text).toBe(200);
    const compiled = obj(obj(r.body).compiled);
    const edges = compiled.edges as unknown[][];
    const handles = edges
      .filter((e) => e.length === 3)
      .map((e) => String(e[2]))
      .sort();
    expect(handles).toEqual(['billing', 'false', 'support', 'true']);
  });

  it('participants: add (default viewer), list, update role, check-role, remove', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'shared');
    const u1 = randomUUID();
    const u2 = randomUUID();
    const add1 = await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: u1 }, ws.brainHeaders);
    expect([200, 201]).toContain(add1.status);
    expect(Object.keys(obj(add1.body))).toEqual(['participant']);
    const part1 = obj(obj(add1.body).participant);
    for (const f of ['id', 'pathway_id', 'user_id', 'role', 'added_by', 'created_at'])
      expect(part1, f).toHaveProperty(f);
    expect(part1).toMatchObject({ pathway_id: p.id, user_id: u1, role: 'viewer' });
    expect(part1.id).toMatch(UUID_RE);
    expect(typeof part1.added_by).toBe('string');
    expect(isIso(part1.created_at)).toBe(true);
    const add2 = await app.post(
      `/v1/pathways/${p.id}/participants`,
      ws.key,
      { user_id: u2, role: 'editor' },
      ws.brainHeaders,
    );
    const part2 = obj(obj(add2.body).participant);
    expect(part2.role).toBe('editor');
    expectError(
      await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { role: 'editor' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: 'nope' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post(
        `/v1/pathways/${p.id}/participants`,
        ws.key,
        { user_id: randomUUID(), role: 'king' },
        ws.brainHeaders,
      ),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post(`/v1/pathways/${randomUUID()}/participants`, ws.key, { user_id: randomUUID() }, ws.brainHeaders),
      404,
      'NOT_FOUND',
    );

    const list = await app.get(`/v1/pathways/${p.id}/participants`, ws.key, ws.brainHeaders);
    expect(list.status).toBe(200);
    expect(Object.keys(obj(list.body))).toEqual(['participants']);
    const ids = arr(obj(list.body).participants).map((x) => x.user_id);
    expect(ids).toEqual(expect.arrayContaining([u1, u2]));

    const upd = await app.put(
      `/v1/pathways/participants/${String(part1.id)}`,
      ws.key,
      { role: 'owner' },
      ws.brainHeaders,
    );
    expect(upd.status).toBe(200);
    expect(obj(obj(upd.body).participant)).toMatchObject({ id: part1.id, role: 'owner' });
    expectError(
      await app.put(`/v1/pathways/participants/${String(part1.id)}`, ws.key, {}, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.put(`/v1/pathways/participants/${randomUUID()}`, ws.key, { role: 'owner' }, ws.brainHeaders),
      404,
      'NOT_FOUND',
    );

    const check = await app.get(
      `/v1/pathways/${p.id}/participants/check-role?user_id=${u1}&role=editor`,
      ws.key,
      ws.brainHeaders,
    );
    expect(check.status).toBe(200);
    obj(check.body);
    expectError(
      await app.get(`/v1/pathways/${p.id}/participants/check-role?role=editor`, ws.key, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.get(`/v1/pathways/${p.id}/participants/check-role?user_id=${u1}`, ws.key, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );

    const rm1 = await app.del(`/v1/pathways/${p.id}/participants/${u1}`, ws.key, ws.brainHeaders);
    expect(rm1.status).toBe(200);
    const rm2 = await app.del(`/v1/pathways/participants/${String(part2.id)}`, ws.key, ws.brainHeaders);
    expect(rm2.status).toBe(200);
    const after = arr(
      obj((await app.get(`/v1/pathways/${p.id}/participants`, ws.key, ws.brainHeaders)).body).participants,
    ).map((x) => x.user_id);
    expect(after).not.toContain(u1);
    expect(after).not.toContain(u2);
  });
});

// ───────────────────────────────────────── Reflexes ─────────────────────────────────────────

describe('reflexes', () => {
  it('create, read, update, delete → { success: true }', async () => {
    const ws = await buildWorkspace(app);
    const integration = randomUUID();
    const r = await app.post('/v1/reflexes', ws.key, {
      name: 'Mailer',
      type: 'effector',
      description: 'sends mail',
      tools: [{ integration_id: integration, tools: ['send_email'] }],
      scope: 'workspace',
    });
    expect([200, 201]).toContain(r.status);
    const rf = obj(r.body);
    expect(typeof rf.id).toBe('string');
    expect(rf).toMatchObject({
      name: 'Mailer',
      type: 'effector',
      description: 'sends mail',
      is_active: true,
      scope: 'workspace',
    });
    expect(rf.tools).toEqual([{ integration_id: integration, tools: ['send_email'] }]);
    const got = await app.get(`/v1/reflexes/${String(rf.id)}`, ws.key);
    expect(got.status).toBe(200);
    expect(obj(got.body)).toMatchObject({ id: rf.id, name: 'Mailer', type: 'effector' });
    const upd = await app.put(`/v1/reflexes/${String(rf.id)}`, ws.key, {
      description: 'sends more mail',
      is_active: false,
    });
    expect(upd.status).toBe(200);
    expect(obj(upd.body)).toMatchObject({ description: 'sends more mail', is_active: false });
    expectError(await app.put(`/v1/reflexes/${String(rf.id)}`, ws.key, { scope: 'brain' }), 400, 'VALIDATION_ERROR');
    const del = await app.del(`/v1/reflexes/${String(rf.id)}`, ws.key);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expectError(await app.get(`/v1/reflexes/${String(rf.id)}`, ws.key), 404, 'NOT_FOUND');
    expectError(await app.del(`/v1/reflexes/${String(rf.id)}`, ws.key), 404, 'NOT_FOUND');
  });

  it('create validation: name, type and scope required; type sensory|effector; brain scope needs brain_id; an implementation', async () => {
    const ws = await buildWorkspace(app);
    const impl = { metadata: { handler: 'calculator' } };
    const bad: Obj[] = [
      { type: 'effector', scope: 'workspace', ...impl },
      { name: '', type: 'effector', scope: 'workspace', ...impl },
      { name: 'x', scope: 'workspace', ...impl },
      { name: 'x', type: 'actuator', scope: 'workspace', ...impl },
      { name: 'x', type: 'effector', ...impl },
      { name: 'x', type: 'effector', scope: 'galaxy', ...impl },
      { name: 'x', type: 'effector', scope: 'brain', ...impl },
      { name: 'x', type: 'sensory', scope: 'workspace' },
      { name: 'x', type: 'sensory', scope: 'workspace', tools: [{ integration_id: randomUUID() }] },
    ];
    for (const body of bad) expectError(await app.post('/v1/reflexes', ws.key, body), 400, 'VALIDATION_ERROR');
    const brain = await app.post('/v1/reflexes', ws.key, {
      name: 'brainy',
      type: 'sensory',
      scope: 'brain',
      brain_id: ws.brainId,
      ...impl,
    });
    expect([200, 201]).toContain(brain.status);
    expect(obj(brain.body)).toMatchObject({ scope: 'brain', type: 'sensory' });
    const server = await app.post('/v1/reflexes', ws.key, {
      name: 'remote',
      type: 'effector',
      scope: 'workspace',
      metadata: { server_url: 'https://tools.example.com/mcp' },
    });
    expect([200, 201]).toContain(server.status);
  });

  it('GET /v1/reflexes: default limit 20, type filter, search, sortBy name', async () => {
    const ws = await buildWorkspace(app);
    for (let i = 0; i < 21; i++) {
      const r = await app.post('/v1/reflexes', ws.key, {
        name: `rf-${String(i).padStart(2, '0')}`,
        type: i % 3 === 0 ? 'sensory' : 'effector',
        scope: 'workspace',
        metadata: { handler: 'current_time' },
      });
      expect([200, 201]).toContain(r.status);
    }
    await app.post('/v1/reflexes', ws.key, {
      name: 'weather-lookup',
      description: 'looks up weather',
      type: 'sensory',
      scope: 'workspace',
      metadata: { handler: 'current_time' },
    });
    const all = await app.get('/v1/reflexes', ws.key);
    expect(all.status).toBe(200);
    expect(itemsOf(all.body)).toHaveLength(20);
    const sensory = itemsOf((await app.get('/v1/reflexes?type=sensory&limit=100', ws.key)).body);
    expect(sensory).toHaveLength(8);
    expect(sensory.every((r) => r.type === 'sensory')).toBe(true);
    expect(itemsOf((await app.get('/v1/reflexes?search=weather', ws.key)).body).map((r) => r.name)).toEqual([
      'weather-lookup',
    ]);
    expect(
      itemsOf((await app.get('/v1/reflexes?sortBy=name&sortDirection=asc&limit=2&offset=1', ws.key)).body).map(
        (r) => r.name,
      ),
    ).toEqual(['rf-01', 'rf-02']);
    expectError(await app.get('/v1/reflexes?type=actuator', ws.key), 400, 'VALIDATION_ERROR');
  });
});

// ─────────────────────────────────────── Interventions ───────────────────────────────────────

describe('interventions and waiting jobs', () => {
  async function startHumanRun(ws: Ws, data: Obj = {}) {
    const p = await createPathway(ws, `approval-${randomUUID().slice(0, 6)}`, { pathway_graph: humanGraph(data) });
    const r = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { input: { amount: 10 } }, ws.brainHeaders);
    expect(r.status).toBe(202);
    const jobId = String(obj(r.body).job_id);
    const job = await waitForJob(
      ws,
      jobId,
      (s) => s === 'waiting' || s === 'paused' || s === 'completed' || s === 'failed',
    );
    return { jobId, job, pathwayId: p.id };
  }

  it('a human node makes the job waiting with waitingFor; the intervention is listed, readable and summarised', async () => {
    const ws = await buildWorkspace(app);
    const { jobId, job } = await startHumanRun(ws);
    expect(job.status).toBe('waiting');
    obj(job.waitingFor);
    expect(job.result ?? null).toBeNull();
    expect(job.finished_at ?? null).toBeNull();
    const items = await interventionsOf(ws, jobId);
    expect(items).toHaveLength(1);
    const iv = items[0];
    expect(iv.status).toBe('pending');
    const one = await app.get(`/v1/interventions/${String(iv.id)}`, ws.key, ws.brainHeaders);
    expect(one.status).toBe(200);
    const rec = obj(one.body);
    expect(JSON.stringify(rec)).toContain(String(iv.id));
    const deliveries = arr(rec.deliveries ?? obj(rec.intervention ?? {}).deliveries);
    expect(deliveries.length).toBeGreaterThan(0);
    const summary = await app.get('/v1/interventions?summary=1', ws.key, ws.brainHeaders);
    expect(summary.status).toBe(200);
    const s = obj(summary.body);
    obj(s.byStatus);
    expect(Object.keys(obj(s.byStatus)).every((k) => INTERVENTION_STATUSES.includes(k))).toBe(true);
    expect(obj(s.byStatus).pending).toBe(1);
    const grouped = obj(s.grouped);
    expect(Object.keys(grouped).sort()).toEqual(['active', 'expired_or_cancelled', 'resolved']);
    expect(grouped).toEqual({ active: 1, resolved: 0, expired_or_cancelled: 0 });
    expect(obj(job.waitingFor).interventionId ?? iv.id).toBe(iv.id);
    // status filter and brain_scope=all
    expect(
      itemsOf((await app.get('/v1/interventions?status=pending', ws.key, ws.brainHeaders)).body).map((x) => x.id),
    ).toContain(iv.id);
    expect(itemsOf((await app.get('/v1/interventions?status=approved', ws.key, ws.brainHeaders)).body)).toHaveLength(0);
    expect(itemsOf((await app.get('/v1/interventions?brain_scope=all', ws.key)).body).map((x) => x.id)).toContain(
      iv.id,
    );
    for (const x of itemsOf((await app.get('/v1/interventions', ws.key, ws.brainHeaders)).body))
      expect(INTERVENTION_STATUSES).toContain(x.status);
    // Other workspaces do not see it.
    const other = await buildWorkspace(app);
    expectError(await app.get(`/v1/interventions/${String(iv.id)}`, other.key, other.brainHeaders), 404, 'NOT_FOUND');
    await app.post(`/v1/jobs/${jobId}/cancel`, ws.key);
  });

  it("POST /v1/jobs/:id/input: input must match the paused run's intervention (400), then the run continues", async () => {
    const ws = await buildWorkspace(app);
    const { jobId, job } = await startHumanRun(ws);
    expect(job.status).toBe('waiting');
    const iv = (await interventionsOf(ws, jobId))[0];
    const wrong = await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
      workspace_id: ws.workspaceId,
      input: { type: 'intervention_response', interventionId: randomUUID(), action: 'approve' },
    });
    expectError(wrong, 400, 'VALIDATION_ERROR');
    expectError(
      await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
        workspace_id: ws.workspaceId,
        input: { type: 'something_else', interventionId: iv.id, action: 'approve' },
      }),
      400,
      'VALIDATION_ERROR',
    );
    const otherWs = await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
      workspace_id: randomUUID(),
      input: { type: 'intervention_response', interventionId: iv.id, action: 'approve' },
    });
    expect([400, 403]).toContain(otherWs.status);
    expectError(otherWs, otherWs.status);
    expect((await jobStatus(ws, jobId)).status).toBe('waiting');
    const ok = await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
      workspace_id: ws.workspaceId,
      input: { type: 'intervention_response', interventionId: iv.id, action: 'approve' },
    });
    expect(ok.status, ok.text).toBe(200);
    const done = await waitForJob(ws, jobId);
    expect(done.status).toBe('completed');
    expect(JSON.stringify(done.result)).toContain('after-human');
    const rec = obj((await app.get(`/v1/interventions/${String(iv.id)}`, ws.key, ws.brainHeaders)).body);
    expect(JSON.stringify(rec)).toMatch(/"status":"(approved|answered)"/);
  });

  it('POST /v1/interventions/:id/respond resumes the paused job; unknown id 404', async () => {
    const ws = await buildWorkspace(app);
    const { jobId, job } = await startHumanRun(ws);
    expect(job.status).toBe('waiting');
    const iv = (await interventionsOf(ws, jobId))[0];
    expectError(
      await app.post(`/v1/interventions/${randomUUID()}/respond`, ws.key, { action: 'approve' }, ws.brainHeaders),
      404,
      'NOT_FOUND',
    );
    expectError(
      await app.post(`/v1/interventions/${String(iv.id)}/respond`, ws.key, {}, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    const r = await app.post(
      `/v1/interventions/${String(iv.id)}/respond`,
      ws.key,
      { action: 'approve', comment: 'looks fine' },
      ws.brainHeaders,
    );
    expect(r.status, r.text).toBe(200);
    expect((await waitForJob(ws, jobId)).status).toBe('completed');
    const after = itemsOf((await app.get(`/v1/interventions?job_id=${jobId}`, ws.key, ws.brainHeaders)).body);
    expect(after[0].status).toBe('approved');
    const summary = obj((await app.get('/v1/interventions?summary=1', ws.key, ws.brainHeaders)).body);
    expect(JSON.stringify(summary.byStatus)).toContain('approved');
  });

  it('cancelling a waiting job fails it; its intervention leaves the active group', async () => {
    const ws = await buildWorkspace(app);
    const { jobId, job } = await startHumanRun(ws);
    expect(job.status).toBe('waiting');
    const c = await app.post(`/v1/jobs/${jobId}/cancel`, ws.key);
    expect(c.status).toBe(200);
    const failed = await waitForJob(ws, jobId);
    expect(failed.status).toBe('failed');
    expectError(await app.post(`/v1/jobs/${jobId}/cancel`, ws.key), 400, 'VALIDATION_ERROR');
    let iv = (await interventionsOf(ws, jobId))[0];
    for (let i = 0; i < 20 && iv.status === 'pending'; i++) {
      await sleep(100);
      iv = (await interventionsOf(ws, jobId))[0];
    }
    expect(iv.status).toBe('cancelled');
  });

  it('a paused checkpoint is resumed with POST /v1/jobs/:id/resume', async () => {
    const ws = await buildWorkspace(app);
    const { jobId, job } = await startHumanRun(ws, { pause: true });
    expect(job.status).toBe('paused');
    const r = await app.post(`/v1/jobs/${jobId}/resume`, ws.key, {});
    expect(r.status, r.text).toBe(200);
    const done = await waitForJob(ws, jobId);
    expect(done.status).toBe('completed');
    expectError(await app.post(`/v1/jobs/${randomUUID()}/resume`, ws.key, {}), 404, 'NOT_FOUND');
  });
});

// ───────────────────────────────────── More coverage ─────────────────────────────────────

describe('more traces, versions and public interventions', () => {
  it('trace_type system keeps turns out of default listings; completion neurons store as system', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'background');
    llm.setDefault(() => ({ text: '{"ok": true}' }));
    const sys = await invoke(ws, n.id, { message: 'quiet', neuron_task_options: { trace_type: 'system' } });
    const thread = await invoke(ws, n.id, { message: 'loud' });
    const comp = await createNeuron(ws, 'extractor', { neuron_type: 'completion' });
    const c = await invoke(ws, comp.id, { data: { text: 'x' } });
    for (const j of [sys, thread, c]) expect((await waitForJob(ws, String(j.job_id))).status).toBe('completed');
    const listed = arr(obj((await app.get('/v1/traces', ws.key)).body).traces).map((t) => t.trace_id);
    expect(listed).toContain(thread.trace_id);
    expect(listed).not.toContain(sys.trace_id);
    expect(listed).not.toContain(c.trace_id);
    const sysMsgs = arr(obj((await app.get(`/v1/traces/${String(sys.trace_id)}/messages`, ws.key)).body).engrams);
    expect(sysMsgs.length).toBeGreaterThan(0);
    expect(sysMsgs.every((e) => e.trace_type === 'system')).toBe(true);
    const compMsgs = arr(obj((await app.get(`/v1/traces/${String(c.trace_id)}/messages`, ws.key)).body).engrams);
    expect(compMsgs.every((e) => e.trace_type === 'system')).toBe(true);
    const threadMsgs = arr(obj((await app.get(`/v1/traces/${String(thread.trace_id)}/messages`, ws.key)).body).engrams);
    expect(threadMsgs.map((e) => [e.source_type, e.trace_type])).toEqual([
      ['user', 'thread'],
      ['neuron', 'thread'],
    ]);
    expect(threadMsgs[1].source_id).toBe(n.id);
    expect(obj(threadMsgs[1].content).type).not.toBe('human');
  });

  it('GET /v1/traces filters by user_id and brain_id; updated_at advances with new messages', async () => {
    const ws = await buildWorkspace(app);
    const sub = randomUUID();
    const jwt = await ws.jwt(['member'], sub);
    const mine = randomUUID();
    const keyed = randomUUID();
    await postMessage(ws, mine, 'by user', jwt);
    await postMessage(ws, keyed, 'by key');
    const byUser = obj((await app.get(`/v1/traces?user_id=${sub}`, ws.key)).body);
    expect(arr(byUser.traces).map((t) => t.trace_id)).toEqual([mine]);
    expect(obj((await app.get(`/v1/traces?user_id=${randomUUID()}`, ws.key)).body).total).toBe(0);
    expect(obj((await app.get(`/v1/traces?brain_id=${randomUUID()}`, ws.key)).body).total).toBe(0);
    const before = obj(obj((await app.get(`/v1/traces/${keyed}`, ws.key)).body).trace);
    await sleep(20);
    await postMessage(ws, keyed, 'again');
    const after = obj(obj((await app.get(`/v1/traces/${keyed}`, ws.key)).body).trace);
    expect(Date.parse(String(after.updated_at))).toBeGreaterThan(Date.parse(String(before.updated_at)));
    expect(after.created_at).toBe(before.created_at);
    expect(after.message_count).toBe(2);
    expectError(
      await app.post(`/v1/traces/${keyed}/messages`, ws.key, { content: 'x', memory_ids: ['not-a-uuid'] }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post(`/v1/traces/${keyed}/messages`, ws.key, { content: 'x', metadata: 'flat' }),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('neuron catalog family: history, version read, promote, soft delete and restore', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'catalogued', { system_prompt: 'cat v1' });
    await app.put(`/v1/neurons/${n.id}`, ws.key, { neuron_config: { model: MODEL, system_prompt: 'cat v2' } });
    const head = await app.get(`/v1/resources/neurons/${n.id}`, ws.key, ws.brainHeaders);
    expect(head.status).toBe(200);
    expect(JSON.stringify(head.body)).toContain('cat v2');
    const hist = await app.get(`/v1/resources/neurons/${n.id}/history`, ws.key, ws.brainHeaders);
    expect(hist.status).toBe(200);
    expect(itemsOf(hist.body).length).toBeGreaterThanOrEqual(2);
    const v1 = await app.get(`/v1/resources/neurons/${n.id}/versions/1`, ws.key, ws.brainHeaders);
    expect(v1.status).toBe(200);
    expect(JSON.stringify(v1.body)).toContain('cat v1');
    const promote = await app.post(`/v1/resources/${n.id}/versions/1/promote`, ws.key, {}, ws.brainHeaders);
    expect([200, 201]).toContain(promote.status);
    expect(obj(obj((await app.get(`/v1/neurons/${n.id}`, ws.key)).body).neuron_config).system_prompt).toBe('cat v1');
    const del = await app.del(`/v1/resources/neurons/${n.id}`, ws.key, ws.brainHeaders);
    expect(del.status).toBe(200);
    expectError(await app.get(`/v1/neurons/${n.id}`, ws.key), 404, 'NOT_FOUND');
    expectError(await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: 'x' }), 404, 'NOT_FOUND');
    const restore = await app.post(`/v1/resources/neurons/${n.id}/restore`, ws.key, {}, ws.brainHeaders);
    expect(restore.status).toBe(200);
    expect((await app.get(`/v1/neurons/${n.id}`, ws.key)).status).toBe(200);
    const other = await buildWorkspace(app);
    expectError(await app.get(`/v1/resources/neurons/${n.id}`, other.key, other.brainHeaders), 404, 'NOT_FOUND');
  });

  it('pathway version history is capped while latest_version keeps counting', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'churn', { pathway_graph: markerGraph('m0') });
    for (let i = 1; i <= 55; i++) {
      const r = await app.put(`/v1/pathways/${p.id}`, ws.key, { pathway_graph: markerGraph(`m${i}`) }, ws.brainHeaders);
      expect(r.status).toBe(200);
    }
    const head = obj((await app.get(`/v1/pathways/${p.id}`, ws.key, ws.brainHeaders)).body);
    expect(head.latest_version).toBe(56);
    expect(head.version).toBe(56);
    const versions = itemsOf((await app.get(`/v1/pathways/${p.id}/versions`, ws.key, ws.brainHeaders)).body);
    expect(versions.length).toBeLessThan(56);
    // SPEC-SILENT: the cap is 50 (docs/decisions.md).
    expect(versions.length).toBe(50);
    const tip = await app.get(`/v1/pathways/${p.id}/versions/56`, ws.key, ws.brainHeaders);
    expect(tip.status).toBe(200);
    expect(JSON.stringify(tip.body)).toContain('m55');
  });

  it('public intervention routes: delivery by token (unauthenticated), respond resumes the job', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'public-approval', { pathway_graph: humanGraph() });
    const r = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, {}, ws.brainHeaders);
    const jobId = String(obj(r.body).job_id);
    expect((await waitForJob(ws, jobId, (s) => s !== 'pending' && s !== 'running')).status).toBe('waiting');
    const iv = (await interventionsOf(ws, jobId))[0];
    const deliveries = arr(iv.deliveries);
    expect(deliveries.length).toBeGreaterThan(0);
    const token = deliveries.map((d) => d.token).find((t) => typeof t === 'string');
    expect(typeof token).toBe('string');
    const view = await app.get(`/v1/public/interventions/${String(token)}`);
    expect(view.status).toBe(200);
    obj(view.body);
    expectError(await app.get('/v1/public/interventions/not-a-real-token'), 404, 'NOT_FOUND');
    expectError(
      await app.post(`/v1/public/interventions/${String(token)}/respond`, undefined, {}),
      400,
      'VALIDATION_ERROR',
    );
    const resp = await app.post(`/v1/public/interventions/${String(token)}/respond`, undefined, { action: 'approve' });
    expect(resp.status, resp.text).toBe(200);
    expect((await waitForJob(ws, jobId)).status).toBe('completed');
    const list = obj((await app.get('/v1/interventions', ws.key, ws.brainHeaders)).body);
    expect(list.limit).toBe(50);
  });
});

describe('edge cases of validation and wire format', () => {
  it('malformed JSON, unknown routes and bad query values give { message, code } errors', async () => {
    const ws = await buildWorkspace(app);
    expectError(
      await app.request('POST', '/v1/pathways', { auth: ws.key, raw: '{bad', headers: ws.brainHeaders }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(await app.get('/v1/nothing-here', ws.key), 404, 'NOT_FOUND');
    expectError(await app.get('/v1/traces?created_after=notadate', ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.get('/v1/traces?limit=abc', ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.get('/v1/traces?sort=bogus', ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.get('/v1/traces?order=sideways', ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.get('/v1/traces/not-a-uuid/messages', ws.key), 400, 'VALIDATION_ERROR');
    expectError(await app.post('/v1/traces/not-a-uuid/messages', ws.key, { content: 'x' }), 400, 'VALIDATION_ERROR');
    expectError(await app.get('/v1/pathways?sortBy=colour', ws.key, ws.brainHeaders), 400, 'VALIDATION_ERROR');
    expectError(await app.get('/v1/neurons?sortDirection=up', ws.key, ws.brainHeaders), 400, 'VALIDATION_ERROR');
  });

  it('neuron_config types are validated; a brain of another workspace is refused; the raw name resolves', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    expectError(
      await app.post('/v1/neurons', ws.key, {
        name: 'rid',
        brain_id: ws.brainId,
        neuron_config: { resource_ids: ['x'] },
      }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post('/v1/neurons', ws.key, {
        name: 'temp',
        brain_id: ws.brainId,
        neuron_config: { temperature: 'hot' },
      }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post('/v1/neurons', ws.key, {
        name: 'subs',
        brain_id: ws.brainId,
        neuron_config: { sub_neuron_ids: 'all' },
      }),
      400,
      'VALIDATION_ERROR',
    );
    const foreign = await app.post('/v1/neurons', ws.key, { name: 'foreign', brain_id: other.brainId });
    expect([400, 403, 404]).toContain(foreign.status);
    expectError(foreign, foreign.status);
    const n = await createNeuron(ws, 'Raw Name Bot');
    const byRaw = await app.get('/v1/neurons/Raw%20Name%20Bot', ws.key, ws.brainHeaders);
    expect(byRaw.status).toBe(200);
    expect(obj(byRaw.body).id).toBe(n.id);
    const v = await app.get('/v1/neurons/raw-name-bot?version=1', ws.key, ws.brainHeaders);
    expect(v.status).toBe(200);
    expect(obj(v.body).id).toBe(n.id);
  });

  it('a core neuron read without core admin is redacted', async () => {
    const ws = await buildWorkspace(app);
    const core = await app.post('/v1/neurons', await ws.jwt(['core_admin', 'workspace_admin']), {
      name: 'curated',
      brain_id: ws.brainId,
      scope: 'core',
      neuron_config: { model: MODEL, system_prompt: 'top secret charter' },
    });
    expect([200, 201]).toContain(core.status);
    const asMember = await app.get(
      `/v1/neurons/${String(obj(core.body).id)}`,
      await ws.jwt(['member']),
      ws.brainHeaders,
    );
    expect(asMember.status).toBe(200);
    expect(JSON.stringify(asMember.body)).not.toContain('top secret charter');
    const asCore = await app.get(
      `/v1/neurons/${String(obj(core.body).id)}`,
      await ws.jwt(['core_admin']),
      ws.brainHeaders,
    );
    expect(JSON.stringify(asCore.body)).toContain('top secret charter');
  });

  it('compile: errors? alongside compiled for a broken graph; overrides apply; bad types 400', async () => {
    const ws = await buildWorkspace(app);
    const bad = await app.post('/v1/pathways/compile', ws.key, {
      pathway: {
        nodes: [{ id: 'start', type: 'start', data: {} }],
        edges: [{ id: 'e', source: 'start', target: 'ghost' }],
      },
    });
    expect(bad.status).toBe(200);
    const b = obj(bad.body);
    obj(obj(b.compiled));
    expect(arr(b.errors).length).toBeGreaterThan(0);
    for (const e of arr(b.errors)) expect(typeof e).toBe('string');
    const ok = obj((await app.post('/v1/pathways/compile', ws.key, { pathway: markerGraph('x') })).body);
    expect(ok.preview).toBeUndefined();
    expect(ok.errors === undefined || (Array.isArray(ok.errors) && ok.errors.length === 0)).toBe(true);
    expectError(
      await app.post('/v1/pathways/compile', ws.key, { pathway: markerGraph('x'), payload: 'str' }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post('/v1/pathways/compile', ws.key, { pathway: markerGraph('x'), overrides: 'str' }),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('execute and job input validation: input must be an object; unknown pathway_version; input on a finished job', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws, 'strict', { pathway_graph: markerGraph('s') });
    expectError(
      await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { input: 'text' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { pathway_version: 'one' }, ws.brainHeaders),
      400,
      'VALIDATION_ERROR',
    );
    const missing = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { pathway_version: 999 }, ws.brainHeaders);
    if (missing.status === 202) {
      const job = await waitForJob(ws, String(obj(missing.body).job_id));
      expect(job.status).toBe('failed');
    } else {
      expect([400, 404]).toContain(missing.status);
      expectError(missing, missing.status);
    }
    const r = await app.post(`/v1/pathways/${p.id}/execute`, ws.key, {}, ws.brainHeaders);
    const jobId = String(obj(r.body).job_id);
    await waitForJob(ws, jobId);
    expectError(
      await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
        workspace_id: ws.workspaceId,
        input: { type: 'intervention_response', interventionId: randomUUID(), action: 'approve' },
      }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await app.post(`/v1/jobs/${randomUUID()}/input`, ws.key, {
        workspace_id: ws.workspaceId,
        input: { type: 'intervention_response', interventionId: randomUUID(), action: 'approve' },
      }),
      404,
      'NOT_FOUND',
    );
  });

  it('traces sort by updated_at; title equals metadata.title', async () => {
    const ws = await buildWorkspace(app);
    const a = randomUUID();
    const b = randomUUID();
    await postMessage(ws, a, 'a1');
    await postMessage(ws, b, 'b1');
    await sleep(20);
    await postMessage(ws, a, 'a2');
    expect(
      arr(obj((await app.get('/v1/traces?sort=updated_at&order=asc', ws.key)).body).traces).map((t) => t.trace_id),
    ).toEqual([b, a]);
    expect(
      arr(obj((await app.get('/v1/traces?sort=updated_at&order=desc', ws.key)).body).traces).map((t) => t.trace_id),
    ).toEqual([a, b]);
    // Default sort (SPEC-SILENT: updated_at desc per docs/decisions.md).
    expect(arr(obj((await app.get('/v1/traces', ws.key)).body).traces).map((t) => t.trace_id)).toEqual([a, b]);
    expect((await app.patch(`/v1/traces/${b}`, ws.key, { title: 'Bee' })).status).toBe(200);
    const t = obj(obj((await app.get(`/v1/traces/${b}`, ws.key)).body).trace);
    expect(t.title).toBe('Bee');
    if (t.metadata !== undefined) expect(obj(t.metadata).title).toBe('Bee');
  });

  it('there is no trace create route (traces are created by the first message)', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post('/v1/traces', ws.key, { trace_id: randomUUID() });
    expect([404, 405]).toContain(r.status);
  });

  it('SSE keepalives are ": ping" comment lines', async () => {
    const ws = await buildWorkspace(app);
    const traceId = randomUUID();
    await postMessage(ws, traceId, 'quiet');
    const sse = await readSse(`${app.url}/v1/traces/${traceId}/events`, { headers: auth(ws), timeoutMs: 17_000 });
    expect(sse.comments).toContain('ping');
    // Without a cursor the stream starts from the beginning of the trace's events.
    expect(sse.events.length).toBeGreaterThanOrEqual(1);
  }, 30_000);
});
