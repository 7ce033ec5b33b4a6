import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace, useTestApp, type TestApp } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { startTestWorker } from '../support/worker.js';

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
  WORKSPACE_RUN_SHARE: 2,
  WORKSPACE_MAX_QUEUED_RUNS: 2,
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

/** A job as GET /v1/jobs/:id shows it. */
async function jobOf(app: TestApp, ws: Ws, id: string) {
  const r = await app.get(`/v1/jobs/${id}`, ws.key);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { status: string; current_step: string };
}

describe('run admission', () => {
  it("workspace B past its share of runs waits in its queue (202, nothing started); past the queue it is refused and nothing is stored; workspace A's runs start; B's queue moves as its runs end", async () => {
    const [a, b] = [await buildWorkspace(app), await buildWorkspace(app)];
    const [neuronA, neuronB, pathwayB] = [await neuronOf(a), await neuronOf(b), await pathwayOf(b)];
    const invokeB = (message: string) =>
      app.request('POST', `/v1/neurons/${neuronB}/invoke`, { auth: b.key, body: { message, stream: true } });
    // B fills its share (the runs stay pending: no worker serves this app's task queue)…
    const started: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await invokeB(`flood ${i}`);
      expect(r.status, r.text).toBe(202);
      started.push(String(r.body.job_id));
    }
    for (const id of started) expect((await jobOf(app, b, id)).current_step).not.toMatch(/waiting for a place/);
    // …then its queue: accepted, recorded, not started.
    const queued: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await invokeB(`queued ${i}`);
      expect(r.status, r.text).toBe(202);
      queued.push(String(r.body.job_id));
    }
    for (const id of queued) {
      const job = await jobOf(app, b, id);
      expect(job.status).toBe('pending');
      expect(job.current_step).toMatch(/queued: waiting for a place in the workspace's share of runs/);
    }
    expectShareRefusal(await invokeB('one more'), /queued past its share/);
    // The share counts every kind of run start: a pathway run of B is refused as well.
    expectShareRefusal(
      await app.request('POST', `/v1/pathways/${pathwayB}/execute`, {
        auth: b.key,
        body: { input: {} },
        headers: b.brainHeaders,
      }),
      /queued past its share/,
    );
    // A refused start is not half-done: B has exactly the four jobs it was admitted.
    const jobs = await app.get('/v1/jobs', b.key);
    expect(jobs.status).toBe(200);
    expect((jobs.body as { jobs: unknown[] }).jobs).toHaveLength(4);
    // Workspace A is untouched by B's flood: its run starts at once, not behind B's queue.
    const forA = await app.post(`/v1/neurons/${neuronA}/invoke`, a.key, { message: 'hello', stream: true });
    expect(forA.status, JSON.stringify(forA.body)).toBe(202);
    expect((await jobOf(app, a, String(forA.body.job_id))).current_step).not.toMatch(/waiting for a place/);
    // One of B's runs ends (cancelled): the oldest queued run takes its place, the other still waits.
    expect((await app.post(`/v1/jobs/${started[0]}/cancel`, b.key, {})).status).toBe(200);
    await expect.poll(async () => (await jobOf(app, b, queued[0]!)).current_step, { timeout: 15_000 }).toBe('starting');
    expect((await jobOf(app, b, queued[1]!)).current_step).toMatch(/waiting for a place/);
    // Its workflow was started (the queue kept its start): Temporal has it.
    expect(await app.services.jobs.workflowExists(queued[0]!)).toBe(true);
    expect(await app.services.jobs.workflowExists(queued[1]!)).toBe(false);
    // A queued run cancelled before its place ends at once and never starts.
    expect((await app.post(`/v1/jobs/${queued[1]}/cancel`, b.key, {})).status).toBe(200);
    expect((await app.post(`/v1/jobs/${started[1]}/cancel`, b.key, {})).status).toBe(200);
    expect((await jobOf(app, b, queued[1]!)).status).toBe('failed');
    expect(await app.services.jobs.drain(b.workspaceId)).toBe(0);
    expect(await app.services.jobs.workflowExists(queued[1]!)).toBe(false);
  });
});

/** A workspace alone on the platform runs up to its cap; once another runs too, it keeps to its share. */
const shared = useTestApp({ WORKSPACE_MAX_ACTIVE_RUNS: 3, WORKSPACE_RUN_SHARE: 1, FIRST_TURN_IN_API: false });

describe('run share while others run', () => {
  it('a workspace alone runs up to WORKSPACE_MAX_ACTIVE_RUNS; once another workspace runs, its next starts queue past WORKSPACE_RUN_SHARE', async () => {
    const [c, d] = [await buildWorkspace(shared), await buildWorkspace(shared)];
    const neuron = async (ws: Ws) => {
      const r = await shared.post('/v1/neurons', ws.key, {
        name: 'Echo',
        brain_id: ws.brainId,
        neuron_config: { model: 'local/echo', system_prompt: 'Echo.' },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return String(r.body.id);
    };
    const [neuronC, neuronD] = [await neuron(c), await neuron(d)];
    const invoke = async (ws: Ws, id: string) => {
      const r = await shared.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'hi', stream: true });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      return (await jobOf(shared, ws, String(r.body.job_id))).current_step;
    };
    // C alone: three runs start (its cap), the fourth waits.
    for (let i = 0; i < 3; i++) expect(await invoke(c, neuronC)).not.toMatch(/waiting for a place/);
    expect(await invoke(c, neuronC)).toMatch(/waiting for a place/);
    // D starts a run: it is under its share, so it starts.
    expect(await invoke(d, neuronD)).not.toMatch(/waiting for a place/);
    // C's answer to "does another workspace run?" is trusted for a second; after it, C keeps to its share.
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await invoke(c, neuronC)).toMatch(/waiting for a place/);
  });
});

/** Queued runs are runs like any other: with a worker, every one of a flood past the share completes. */
const served = useTestApp({ WORKSPACE_MAX_ACTIVE_RUNS: 1, WORKSPACE_RUN_SHARE: 1 });

describe('queued runs with a worker', () => {
  let worker: Awaited<ReturnType<typeof startTestWorker>>;
  beforeAll(async () => {
    worker = await startTestWorker(served);
  });
  afterAll(async () => {
    await worker.stop();
  });

  it('every invoke and pathway run of a workspace past its share completes, in turn, with its own answer', async () => {
    const e = await buildWorkspace(served);
    const n = await served.post('/v1/neurons', e.key, {
      name: 'Echo',
      brain_id: e.brainId,
      neuron_config: { model: 'local/echo', system_prompt: 'Echo.' },
    });
    expect(n.status, JSON.stringify(n.body)).toBe(201);
    const p = await served.post(
      '/v1/pathways',
      e.key,
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
      e.brainHeaders,
    );
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    const starts = await Promise.all([
      ...[0, 1, 2].map((i) => served.post(`/v1/neurons/${String(n.body.id)}/invoke`, e.key, { message: `m${i}` })),
      ...[0, 1].map((i) =>
        served.post(`/v1/pathways/${String(p.body.id)}/execute`, e.key, { input: { i } }, e.brainHeaders),
      ),
    ]);
    for (const s of starts) expect(s.status, JSON.stringify(s.body)).toBe(202);
    const ids = starts.map((s) => String(s.body.job_id));
    const steps = await Promise.all(ids.map(async (id) => (await jobOf(served, e, id)).current_step));
    // Four of the five waited for the one place.
    expect(steps.filter((s) => /waiting for a place/.test(s)).length).toBeGreaterThanOrEqual(3);
    const ended = await Promise.all(ids.map((id) => settleJob(served, e.key, id, 45_000)));
    for (const j of ended) expect(j.status, JSON.stringify(j)).toBe('completed');
    expect(JSON.stringify(ended[0]!.result)).toContain('m0');
    expect(JSON.stringify(ended[2]!.result)).toContain('m2');
    expect(ended[4]!.result).toMatchObject({ output: { i: 1 } });
  });

  it('a queued invoke stores nothing of its preparation while it waits, and is prepared and run when it leaves the queue', async () => {
    const e = await buildWorkspace(served);
    const n = await served.post('/v1/neurons', e.key, {
      name: 'Echo',
      brain_id: e.brainId,
      neuron_config: { model: 'local/echo', system_prompt: 'Echo.' },
    });
    expect(n.status, JSON.stringify(n.body)).toBe(201);
    const first = await served.post(`/v1/neurons/${String(n.body.id)}/invoke`, e.key, { message: 'first question' });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const traceId = String(first.body.trace_id);
    const second = await served.post(`/v1/neurons/${String(n.body.id)}/invoke`, e.key, {
      message: 'second question',
      trace_id: traceId,
    });
    expect(second.status, JSON.stringify(second.body)).toBe(202);
    const secondId = String(second.body.job_id);
    // It continues the trace of a run that has not ended: it waits for that run first (double-texting,
    // docs/neurons.md), in the same queue, then for a place in the workspace's share.
    expect((await jobOf(served, e, secondId)).current_step).toBe(
      `queued: waiting for job ${String(first.body.job_id)} on its trace to end`,
    );
    // Nothing of it is prepared while it waits.
    expect(await served.deps.repos.runs.context(secondId)).toBeNull();
    const ended = await Promise.all(
      [String(first.body.job_id), secondId].map((id) => settleJob(served, e.key, id, 45_000)),
    );
    for (const j of ended) expect(j.status, JSON.stringify(j)).toBe('completed');
    // Prepared when it left the queue, on its own message.
    expect(JSON.stringify(ended[1]!.result)).toContain('second question');
  });
});
