import { describe, expect, it } from 'vitest';
import { buildWorkspace, useTestApp, type TestApp } from '../support/app.js';

/*
 * Threat class: one tenant exhausts a capacity every tenant shares (docs/operations.md, "Fair
 * share"). The attacker is the admin of workspace B, holding as much as the platform lets it
 * hold; the victim is workspace A, whose requests must still be served. Each shared capacity has
 * a per-workspace share beside its global cap; the caps are small here so a test reaches them.
 * No worker runs: a run started stays pending, so it holds its place in its workspace's share.
 */
/** The workspace's share of requests per RATE_LIMIT_DURATION_S (every credential of it together). */
const WORKSPACE_POINTS = 60;
const app = useTestApp({
  WORKSPACE_RATE_LIMIT_POINTS: WORKSPACE_POINTS,
  RATE_LIMIT_DURATION_S: 60,
  MCP_MAX_SESSIONS: 8,
  MCP_WORKSPACE_SHARE_PERCENT: 25, // 2 sessions per workspace
  SSE_MAX_STREAMS: 8,
  SSE_WORKSPACE_SHARE_PERCENT: 25, // 2 streams per workspace
  WORKSPACE_MAX_ACTIVE_RUNS: 2,
  // No first turn in the API either: nothing of a pending run is still at work when the app closes.
  FIRST_TURN_IN_API: false,
});

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

/** The refusal every share answers: 429, Retry-After, and a `{ message, code }` that says why. */
function expectShareRefusal(res: { status: number; headers: Headers; text: string }, what: RegExp) {
  expect(res.status, res.text).toBe(429);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  const body = JSON.parse(res.text) as { code: string; message: string };
  expect(body.code).toBe('RATE_LIMIT');
  expect(body.message).toMatch(what);
  expect(body.message).toMatch(/share/);
}

// ─── MCP sessions ─────────────────────────────────────────────────────────────────────────────

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'attacker', version: '1' } },
};

/** An MCP initialize as any client sends it: the session id on success. */
async function openMcp(app: TestApp, ws: Ws) {
  const res = await fetch(`${app.url}/v1/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ws.key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(INITIALIZE),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, session: res.headers.get('mcp-session-id') };
}

const closeMcp = (app: TestApp, ws: Ws, session: string) =>
  fetch(`${app.url}/v1/mcp`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${ws.key}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
  }).then((r) => r.status);

describe('MCP sessions', () => {
  it('workspace B holding its share of MCP sessions is refused the next one; workspace A still opens one', async () => {
    const [a, b] = [await buildWorkspace(app), await buildWorkspace(app)];
    const held = [await openMcp(app, b), await openMcp(app, b)];
    for (const h of held) expect(h.status, h.text).toBe(200);
    expectShareRefusal(await openMcp(app, b), /MCP sessions/);
    const forA = await openMcp(app, a);
    expect(forA.status, forA.text).toBe(200);
    expect(forA.session).toBeTruthy();
    // A session B closes gives its place back.
    expect(await closeMcp(app, b, held[0].session!)).toBe(200);
    expect((await openMcp(app, b)).status).toBe(200);
  });
});

// ─── SSE streams ──────────────────────────────────────────────────────────────────────────────

/** Opens the workspace's resource-event stream and keeps it open until `close` is called. */
async function openStream(app: TestApp, ws: Ws) {
  const ac = new AbortController();
  const res = await fetch(`${app.url}/v1/resource-events/stream`, {
    headers: { authorization: `Bearer ${ws.key}` },
    signal: ac.signal,
  });
  const text = res.ok ? '' : await res.text();
  return { status: res.status, headers: res.headers, text, close: () => ac.abort() };
}

describe('SSE streams', () => {
  it('workspace B holding its share of open streams is refused the next one; workspace A still opens one', async () => {
    const [a, b] = [await buildWorkspace(app), await buildWorkspace(app)];
    const held = [await openStream(app, b), await openStream(app, b)];
    try {
      for (const h of held) expect(h.status, h.text).toBe(200);
      expectShareRefusal(await openStream(app, b), /open streams/);
      const forA = await openStream(app, a);
      expect(forA.status, forA.text).toBe(200);
      forA.close();
      // A stream B closes gives its place back (the server sees the close a moment later).
      held.shift()!.close();
      await expect
        .poll(async () => {
          const s = await openStream(app, b);
          s.close();
          return s.status;
        })
        .toBe(200);
    } finally {
      for (const h of held) h.close();
    }
  });
});

// ─── Request rate ─────────────────────────────────────────────────────────────────────────────

describe('request rate', () => {
  it('workspace B cannot multiply its rate by using more credentials; workspace A is still served', async () => {
    const [a, b] = [await buildWorkspace(app), await buildWorkspace(app)];
    // B spends its workspace's share with its API key (each credential alone is far below its own limit)…
    for (let i = 0; i < WORKSPACE_POINTS; i++) expect((await app.get('/v1/jobs', b.key)).status).toBe(200);
    // …then turns to fresh credentials of the same workspace: each has its own credential limit, not a new share.
    const fresh = await app.request('GET', '/v1/jobs', { auth: await b.jwt(['workspace_admin']) });
    expect(fresh.status, fresh.text).toBe(429);
    expect(fresh.body).toMatchObject({ code: 'RATE_LIMIT' });
    expect(Number(fresh.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await app.get('/v1/jobs', a.key)).status).toBe(200);
  });
});

// ─── Run admission ────────────────────────────────────────────────────────────────────────────

async function neuronOf(ws: Ws): Promise<string> {
  const r = await app.post('/v1/neurons', ws.key, {
    name: 'Echo',
    brain_id: ws.brainId,
    neuron_config: { model: 'local/echo', system_prompt: 'Echo.' },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String(r.body.id);
}

async function pathwayOf(ws: Ws): Promise<string> {
  const r = await app.post(
    '/v1/pathways',
    ws.key,
    {
      name: 'Pass',
      pathway_graph: {
        nodes: [
          { id: 'in', type: 'start' },
          { id: 'out', type: 'output', data: { value: 'input' } },
        ],
        edges: [{ id: 'e', source: 'in', target: 'out' }],
      },
    },
    ws.brainHeaders,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String(r.body.id);
}

describe('run admission', () => {
  it("workspace B holding its share of active runs is refused the next start, and nothing of it is stored; workspace A's runs start", async () => {
    const [a, b] = [await buildWorkspace(app), await buildWorkspace(app)];
    const [neuronA, neuronB, pathwayB] = [await neuronOf(a), await neuronOf(b), await pathwayOf(b)];
    // B fills its share (the runs stay pending: no worker serves this app's task queue).
    for (let i = 0; i < 2; i++) {
      const r = await app.post(`/v1/neurons/${neuronB}/invoke`, b.key, { message: `flood ${i}`, stream: true });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
    }
    const refused = await app.request('POST', `/v1/neurons/${neuronB}/invoke`, {
      auth: b.key,
      body: { message: 'one more', stream: true },
    });
    expectShareRefusal(refused, /runs pending or running/);
    // The share counts every kind of run start: a pathway run of B is refused as well.
    expectShareRefusal(
      await app.request('POST', `/v1/pathways/${pathwayB}/execute`, {
        auth: b.key,
        body: { input: {} },
        headers: b.brainHeaders,
      }),
      /runs pending or running/,
    );
    // A refused start is not half-done: B has exactly the two jobs it was admitted.
    const jobs = await app.get('/v1/jobs', b.key);
    expect(jobs.status).toBe(200);
    expect((jobs.body as { jobs: unknown[] }).jobs).toHaveLength(2);
    // Workspace A is untouched by B's flood.
    const forA = await app.post(`/v1/neurons/${neuronA}/invoke`, a.key, { message: 'hello', stream: true });
    expect(forA.status, JSON.stringify(forA.body)).toBe(202);
  });
});
