/**
 * Threat class: a member (or an editor) of a workspace reads a secret or a connection token that
 * only admins may use (docs/security.md, docs/pathways.md "Secrets"). Using a secret or a
 * connection is the privilege of whoever SAVED the graph (or reflex), checked when it is saved and
 * again when it runs; a secret goes only to its allowed_hosts, and never into a URL's scheme, host
 * or port. The attacks are the member's real requests against the real API and worker; a loopback
 * receiver stands for the hosts (allowed by host for the platform under test, as in
 * test/api/pathway-http.test.ts). Whatever is refused, the value is nowhere: not in the job's
 * status, result or stream, not in its workflow history, not in a log line, not at the receiver.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secrets.js';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { readSse } from '../support/sse.js';
import { startTestWorker } from '../support/worker.js';

const logLines: string[] = [];
let running: {
  app: TestApp & { close(): Promise<void> };
  worker: Awaited<ReturnType<typeof startTestWorker>>;
  llm: ScriptedOpenAI;
};
const app = new Proxy({} as TestApp, { get: (_, k) => Reflect.get(running.app, k, running.app) as unknown });

/** Every request the receiver got: path, headers and body. */
const received: { path: string; headers: IncomingMessage['headers']; body: string }[] = [];
let base = '';
let server: Server;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      // Echoes everything: a node's value that kept a secret would show it.
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ path: req.url, headers: req.headers, body }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const llm = await startScriptedOpenAI();
  llm.setDefault(() => ({ text: 'done' }));
  const started = await startTestApp(
    { OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'], OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test-key' },
    { logLines },
  );
  running = { app: started, worker: await startTestWorker(started), llm };
});
afterAll(async () => {
  await running?.worker.stop();
  await running?.app.close();
  await running?.llm.close();
  await new Promise((r) => server.close(r));
});

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const graphWith = (http: Record<string, unknown>) => ({
  nodes: [
    { id: 's', type: 'start', data: {} },
    { id: 'h', type: 'http', data: http },
    { id: 'o', type: 'output', data: {} },
  ],
  edges: [
    { id: 'e1', source: 's', target: 'h' },
    { id: 'e2', source: 'h', target: 'o' },
  ],
});

async function settle(ws: Ws, auth: string, jobId: string) {
  const until = Date.now() + 45_000;
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, auth)).body);
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() > until) throw new Error(`job ${jobId} is still ${job.status}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** Runs an inline graph as `auth` (POST /v1/jobs); the settled job. */
async function runInline(ws: Ws, auth: string, http: Record<string, unknown>) {
  mark = logLines.length;
  const r = await app.post('/v1/jobs', auth, { pathway: graphWith(http), input: {} }, ws.brainHeaders);
  expect(r.status, r.text).toBe(200);
  const jobId = String(r.body.job_id);
  return { jobId, job: await settle(ws, auth, jobId) };
}

/** Runs a stored pathway as `auth` (POST /v1/jobs with pathway_id); the settled job. */
async function runStored(ws: Ws, auth: string, pathwayId: string) {
  mark = logLines.length;
  const r = await app.post('/v1/jobs', auth, { pathway_id: pathwayId, input: {} }, ws.brainHeaders);
  expect(r.status, r.text).toBe(200);
  const jobId = String(r.body.job_id);
  return { jobId, job: await settle(ws, auth, jobId) };
}

/** Where the log lines of the last run started (what the request logs of the set-up wrote is not the run's). */
let mark = 0;

/** Everything a job left where a person or a log could read it: status, stream, stored documents, history, log lines. */
async function everythingOf(ws: Ws, jobId: string): Promise<string> {
  const status = (await app.get(`/v1/jobs/${jobId}/status`, ws.key)).text;
  const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, { headers: { authorization: `Bearer ${ws.key}` } });
  const docs: unknown[] = [];
  for (const c of await app.deps.db.listCollections({}, { nameOnly: true }).toArray()) {
    if (c.name === 'workspace_secrets' || c.name === 'connections') continue; // sealed values
    docs.push(...(await app.deps.db.collection(c.name).find({ workspaceId: ws.workspaceId }).toArray()));
  }
  const history = await app.deps.temporal.client.workflow.getHandle(jobId).fetchHistory();
  return [
    status,
    sse.events.map((e) => e.data).join('\n'),
    JSON.stringify(docs),
    ...textsOf(history),
    ...logLines.slice(mark),
  ]
    .join('\n')
    .toLowerCase();
}

/** Every string in a workflow history, payloads (bytes) decoded as UTF-8: activity inputs, results, failures. */
function textsOf(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (v instanceof Uint8Array) return [Buffer.from(v).toString('utf8')];
  if (Array.isArray(v)) return v.flatMap(textsOf);
  if (typeof v === 'object' && v !== null) return Object.values(v).flatMap(textsOf);
  return [];
}

const toReceiver = (jobId: string) => received.filter((r) => String(r.headers['idempotency-key']).startsWith(jobId));

/** A fresh workspace, its admin, a member, and an admin-only secret (mixed case: hosts lowercase it). */
async function setup(policy: Record<string, unknown> = {}) {
  const ws = await buildWorkspace(app);
  const admin = await ws.jwt(['workspace_admin']);
  const memberSub = randomUUID();
  const member = await ws.jwt([], memberSub);
  const secret = `AdminOnly${randomUUID().replace(/-/g, '')}`;
  const put = await app.put('/v1/secrets/API_TOKEN', admin, { value: secret, ...policy });
  expect(put.status, put.text).toBe(200);
  return { ws, admin, member, memberSub, secret };
}

describe('a workspace secret is the privilege of whoever saved the graph', () => {
  it('PUT /v1/secrets takes allowed_hosts and usable_by (default admins); GET shows them, never the value', async () => {
    const { ws, admin, secret } = await setup({ allowed_hosts: ['API.example.com', '*.example.org'] });
    const list = await app.get('/v1/secrets', admin);
    expect(list.body).toMatchObject({
      secrets: [{ name: 'API_TOKEN', allowed_hosts: ['api.example.com', '*.example.org'], usable_by: 'admins' }],
    });
    expect(list.text).not.toContain(secret);
    const bad = await app.put('/v1/secrets/X', admin, { value: 'v', allowed_hosts: ['http://evil/'] });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('allowed_hosts');
    const many = await app.put('/v1/secrets/X', admin, { value: 'v', allowed_hosts: Array(21).fill('a.com') });
    expect(many.status).toBe(400);
    expect((await app.put('/v1/secrets/X', admin, { value: 'v', usable_by: 'everyone' })).status).toBe(400);
    expect((await app.put('/v1/secrets/X', await ws.jwt([]), { value: 'v' })).status).toBe(403);
  });

  it("a member's pathway that sends an admin secret (even base64 or reversed) is refused at save, naming it; nothing is stored", async () => {
    const { ws, member, secret } = await setup();
    for (const template of [
      'Bearer {{ secrets.API_TOKEN }}',
      '{{ $base64encode(secrets.API_TOKEN) }}',
      "{{ $join($reverse($split(secrets.API_TOKEN, '')), '') }}",
    ]) {
      const r = await app.post(
        '/v1/pathways',
        member,
        { name: `steal-${randomUUID()}`, pathway_graph: graphWith({ url: `${base}/x`, headers: { 'X-A': template } }) },
        ws.brainHeaders,
      );
      expect(r.status, r.text).toBe(403);
      expect(r.body.message).toContain('API_TOKEN');
      expect(r.text).not.toContain(secret);
    }
    expect((await app.get('/v1/pathways', member, ws.brainHeaders)).body.pathways).toEqual([]);
  });

  it("a member's inline run that copies an admin secret into its result fails the node; the value is nowhere", async () => {
    const { ws, member, secret } = await setup();
    const { jobId, job } = await runInline(ws, member, {
      url: `${base}/echo`,
      method: 'POST',
      body: {
        b64: '{{ $base64encode(secrets.API_TOKEN) }}',
        rev: "{{ $join($reverse($split(secrets.API_TOKEN, '')), '') }}",
      },
    });
    expect(job.status).toBe('failed');
    expect(job.failedReason).toContain('secret "API_TOKEN" may be used only by a graph saved by a workspace admin');
    expect(toReceiver(jobId)).toEqual([]);
    const all = await everythingOf(ws, jobId);
    expect(all).not.toContain(secret.toLowerCase());
    expect(all).not.toContain(Buffer.from(secret).toString('base64').toLowerCase());
    expect(all).not.toContain([...secret].reverse().join('').toLowerCase());
  });

  it('a graph an admin saved runs with the secret for a member; once a member edits the graph it is refused, and at run time a version saved by a non-admin gets nothing', async () => {
    const { ws, admin, member, memberSub, secret } = await setup();
    const created = await app.post(
      '/v1/pathways',
      admin,
      {
        name: 'admin-made',
        pathway_graph: graphWith({ url: `${base}/ok`, headers: { Authorization: 'Bearer {{ secrets.API_TOKEN }}' } }),
      },
      ws.brainHeaders,
    );
    expect(created.status, created.text).toBe(201);
    const id = String(created.body.id);
    const history = await app.get(`/v1/pathways/${id}/versions`, member);
    expect(history.body.versions).toMatchObject([{ version: 1, saved_by_admin: true }]);
    const ran = await runStored(ws, member, id);
    expect(ran.job.status, ran.job.failedReason ?? '').toBe('completed');
    expect(toReceiver(ran.jobId)[0].headers.authorization).toBe(`Bearer ${secret}`);

    // The member is made an editor and changes where the request goes: the save is refused.
    const added = await app.post(
      `/v1/pathways/${id}/participants`,
      admin,
      { user_id: memberSub, role: 'editor' },
      ws.brainHeaders,
    );
    expect(added.status, added.text).toBe(201);
    const edit = await app.put(
      `/v1/pathways/${id}`,
      member,
      {
        pathway_graph: graphWith({
          url: `${base}/elsewhere`,
          headers: { Authorization: 'Bearer {{ secrets.API_TOKEN }}' },
        }),
      },
      ws.brainHeaders,
    );
    expect(edit.status, edit.text).toBe(403);
    expect(edit.body.message).toContain('API_TOKEN');
    // Renaming keeps the admin's graph and its saver: it still runs.
    expect((await app.put(`/v1/pathways/${id}`, member, { name: 'renamed' }, ws.brainHeaders)).status).toBe(200);
    expect((await runStored(ws, member, id)).job.status).toBe('completed');

    // A version recorded before savers were (or by a member under an older rule): treated as not an admin's.
    const pathways = app.deps.db.collection<{ _id: string; versions: Record<string, unknown>[] }>('pathways');
    const stored = (await pathways.findOne({ _id: id }))!;
    const versions = stored.versions.map(({ savedBy: _b, savedByAdmin: _a, ...v }) => v);
    await pathways.updateOne({ _id: id }, { $set: { versions }, $unset: { graphSavedBy: '', graphSavedByAdmin: '' } });
    const legacy = await runStored(ws, member, id);
    expect(legacy.job.status).toBe('failed');
    expect(legacy.job.failedReason).toContain('may be used only by a graph saved by a workspace admin');
    expect(toReceiver(legacy.jobId)).toEqual([]);
    expect(await everythingOf(ws, legacy.jobId)).not.toContain(secret.toLowerCase());
  });

  it('usable_by editors: an editor may save and run it; the secret policy is read again at run time', async () => {
    const { ws, admin, member, secret } = await setup({ usable_by: 'editors' });
    const created = await app.post(
      '/v1/pathways',
      member,
      {
        name: 'editor-made',
        pathway_graph: graphWith({ url: `${base}/ed`, headers: { 'X-Key': '{{ secrets.API_TOKEN }}' } }),
      },
      ws.brainHeaders,
    );
    expect(created.status, created.text).toBe(201);
    const id = String(created.body.id);
    const ok = await runStored(ws, member, id);
    expect(ok.job.status, ok.job.failedReason ?? '').toBe('completed');
    expect(toReceiver(ok.jobId)[0].headers['x-key']).toBe(secret);
    // The admin narrows the secret to admins: the member's saved graph stops getting it.
    expect((await app.put('/v1/secrets/API_TOKEN', admin, { value: secret, usable_by: 'admins' })).status).toBe(200);
    const after = await runStored(ws, member, id);
    expect(after.job.status).toBe('failed');
    expect(toReceiver(after.jobId)).toEqual([]);
  });
});

describe('a secret goes only to its hosts, never into a URL host', () => {
  it('a host outside allowed_hosts fails the node before any request; the value is nowhere', async () => {
    const { ws, admin, secret } = await setup({ allowed_hosts: ['api.example.com'] });
    const { jobId, job } = await runInline(ws, admin, {
      url: `${base}/elsewhere?k={{ secrets.API_TOKEN }}`,
    });
    expect(job.status).toBe('failed');
    expect(job.failedReason).toContain('secret "API_TOKEN" may not be sent to 127.0.0.1');
    expect(toReceiver(jobId)).toEqual([]);
    expect(await everythingOf(ws, jobId)).not.toContain(secret.toLowerCase());
    // Allowed by pattern: it is sent.
    await app.put('/v1/secrets/API_TOKEN', admin, { value: secret, allowed_hosts: ['127.0.0.1'] });
    const ok = await runInline(ws, admin, { url: `${base}/fine`, headers: { 'X-Key': '{{ secrets.API_TOKEN }}' } });
    expect(ok.job.status, ok.job.failedReason ?? '').toBe('completed');
  });

  it('a secret in the URL host is refused at save (400) and, in an inline run, fails without a lookup; its lowercased form is nowhere', async () => {
    const { ws, admin, secret } = await setup();
    for (const url of [
      'http://{{ secrets.API_TOKEN }}.invalid/x',
      `${base.replace('127.0.0.1', '{{ secrets.API_TOKEN }}')}/x`,
      "{{ 'http://' & secrets.API_TOKEN & '.invalid' }}/x",
      'http://127.0.0.1:{{ $length(secrets.API_TOKEN) }}/x',
    ]) {
      const r = await app.post(
        '/v1/pathways',
        admin,
        { name: `host-${randomUUID()}`, pathway_graph: graphWith({ url }) },
        ws.brainHeaders,
      );
      expect(r.status, url).toBe(400);
      expect(r.body.message).toContain('scheme, host or port');
    }
    const { jobId, job } = await runInline(ws, admin, { url: 'http://{{ secrets.API_TOKEN }}.invalid/x' });
    expect(job.status).toBe('failed');
    expect(job.failedReason).toContain("may not be used in the URL's scheme, host or port");
    expect(await everythingOf(ws, jobId)).not.toContain(secret.toLowerCase());
    // An indirect read of the secrets in the host renders over none of them.
    const sneaky = await runInline(ws, admin, {
      url: `http://{{ $string($lookup($, 'sec' & 'rets')) }}.invalid/x`,
      headers: { 'X-Key': '{{ secrets.API_TOKEN }}' },
    });
    expect(sneaky.job.status).toBe('failed');
    expect(await everythingOf(ws, sneaky.jobId)).not.toContain(secret.toLowerCase());
  });
});

describe('a workspace connection is an admin-only credential', () => {
  /** A workspace-wide integration and its connected token (stored as the callback stores one). */
  async function teamConnection(ws: Ws, admin: string) {
    const put = await app.put('/v1/integrations/team', admin, {
      authorization_endpoint: `${base}/auth`,
      token_endpoint: `${base}/token`,
      client_id: 'team',
      per: 'workspace',
    });
    expect(put.status, put.text).toBe(200);
    const token = `TeamToken${randomUUID()}`;
    const box = createSecretBox(app.deps.config);
    const now = new Date();
    await app.deps.db.collection('connections').insertOne({
      _id: randomUUID() as never,
      workspaceId: ws.workspaceId,
      integrationId: 'team',
      ownerId: 'workspace',
      accessSealed: box.seal(token),
      refreshSealed: null,
      expiresAt: null,
      scope: null,
      keyId: box.keyId,
      createdAt: now,
      refreshedAt: null,
      updatedAt: now,
    });
    return token;
  }

  it("a member's graph or reflex naming the workspace connection is refused at save; a member's inline run gets no token", async () => {
    const { ws, admin, member } = await setup();
    const token = await teamConnection(ws, admin);
    const graph = await app.post(
      '/v1/pathways',
      member,
      {
        name: 'team-steal',
        pathway_graph: graphWith({ url: `${base}/x`, headers: { Authorization: 'Bearer {{ connections.team }}' } }),
      },
      ws.brainHeaders,
    );
    expect(graph.status, graph.text).toBe(403);
    expect(graph.body.message).toContain('team');
    const reflex = await app.post('/v1/reflexes', member, {
      name: 'team-steal',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: { server_url: `${base}/mcp`, integration_id: 'team' },
    });
    expect(reflex.status, reflex.text).toBe(403);
    expect(reflex.body.message).toContain('integration_id');

    const { jobId, job } = await runInline(ws, member, {
      url: `${base}/x`,
      headers: { Authorization: 'Bearer {{ connections.team }}' },
    });
    expect(job.status).toBe('failed');
    expect(job.failedReason).toContain('connection "team"');
    expect(toReceiver(jobId)).toEqual([]);
    expect(await everythingOf(ws, jobId)).not.toContain(token.toLowerCase());

    // The admin's own graph gets it.
    const ok = await runInline(ws, admin, {
      url: `${base}/x`,
      headers: { Authorization: 'Bearer {{ connections.team }}' },
    });
    expect(ok.job.status, ok.job.failedReason ?? '').toBe('completed');
    expect(toReceiver(ok.jobId)[0].headers.authorization).toBe(`Bearer ${token}`);
  });

  it("a member's reflex saved before its integration became the workspace's connection does not send the token to the member's server", async () => {
    const { ws, admin, member } = await setup();
    // Saved while `team` named nothing configured: nothing to refuse then.
    const reflex = await app.post('/v1/reflexes', member, {
      name: 'early-bird',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: { server_url: `${base}/mcp`, integration_id: 'team' },
    });
    expect(reflex.status, reflex.text).toBe(201);
    const token = await teamConnection(ws, admin);
    const neuron = await app.post('/v1/neurons', member, { name: 'helper', brain_id: ws.brainId });
    expect(neuron.status, neuron.text).toBe(201);
    const neuronId = String(neuron.body.id);
    expect((await app.post(`/v1/neurons/${neuronId}/reflexes`, member, { reflex_id: reflex.body.id })).status).toBe(
      201,
    );
    const before = received.length;
    mark = logLines.length;
    const invoke = await app.post(`/v1/neurons/${neuronId}/invoke`, member, { message: 'list your tools' });
    expect(invoke.status, invoke.text).toBe(202);
    const jobId = String(invoke.body.job_id);
    await settle(ws, member, jobId);
    const sent = received.slice(before);
    expect(sent.map((r) => r.headers.authorization ?? '').join('\n')).not.toContain(token);
    expect(sent.filter((r) => r.path.startsWith('/mcp'))).toEqual([]);
    expect(logLines.slice(mark).join('\n')).not.toContain(token);
  });
});
