import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Neuron } from '../../src/neurons/schemas.js';
import { NeuronReflexAssignment, NeuronReflexSummary, Reflex, ReflexList } from '../../src/reflexes/schemas.js';
import { systemScope } from '../../src/kernel/scope.js';
import { buildWorkspace, useTestApp } from '../support/app.js';

const app = useTestApp();

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const toolsBody = {
  type: 'effector',
  scope: 'workspace',
  tools: [{ integration_id: 'gmail', tools: ['send_email', 'list_threads'] }],
};

async function createReflex(ws: Ws, body: Record<string, unknown> = {}, auth: string = ws.key) {
  const res = await app.post(
    '/v1/reflexes',
    auth,
    { name: `r-${randomUUID().slice(0, 8)}`, ...toolsBody, ...body },
    ws.brainHeaders,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return Reflex.parse(res.body);
}

async function createNeuron(ws: Ws, name = `n-${randomUUID().slice(0, 8)}`) {
  const res = await app.post('/v1/neurons', ws.key, { name }, ws.brainHeaders);
  expect(res.status).toBe(201);
  return Neuron.parse(res.body);
}

describe('reflexes: CRUD', () => {
  it('POST /v1/reflexes creates a reflex; metadata is stored intact', async () => {
    const ws = await buildWorkspace(app);
    const res = await app.post('/v1/reflexes', ws.key, {
      name: 'Mailer',
      description: 'sends mail',
      metadata: { 'a.b': 1, $x: [[1, 2]] },
      ...toolsBody,
    });
    expect(res.status).toBe(201);
    expect(Reflex.parse(res.body)).toMatchObject({
      name: 'Mailer',
      type: 'effector',
      scope: 'workspace',
      is_active: true,
      description: 'sends mail',
      workspace_id: ws.workspaceId,
      tools: [{ integration_id: 'gmail', tools: ['send_email', 'list_threads'] }],
      metadata: { 'a.b': 1, $x: [[1, 2]] },
    });
    const got = await app.get(`/v1/reflexes/${res.body.id as string}`, ws.key);
    expect(got.status).toBe(200);
    expect(Reflex.parse(got.body).metadata).toEqual({ 'a.b': 1, $x: [[1, 2]] });
  });

  it('a reflex must define integration-backed tools, internal behavior or a server-backed implementation', async () => {
    const ws = await buildWorkspace(app);
    const post = (body: Record<string, unknown>) =>
      app.post('/v1/reflexes', ws.key, { name: 'x', type: 'sensory', scope: 'workspace', ...body });
    const none = await post({});
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(none.body.message)).toContain('a reflex must define integration-backed tools');
    expect((await post({ tools: [] })).status).toBe(400);
    expect((await post({ metadata: { handler: 'calculator' } })).status).toBe(201);
    expect((await post({ metadata: { server_url: 'https://tools.example.com/mcp' } })).status).toBe(201);
    const badHandler = await post({ metadata: { handler: 'rm_rf' } });
    expect(badHandler.status).toBe(400);
    expect(String(badHandler.body.message)).toContain('metadata.handler');
    expect((await post({ metadata: { server_url: 'ftp://x' } })).status).toBe(400);
    expect((await post({ metadata: { server_url: 'not a url' } })).status).toBe(400);
    // Other body validation.
    expect((await post({ name: '', metadata: { handler: 'calculator' } })).status).toBe(400);
    expect((await post({ type: 'motor', metadata: { handler: 'calculator' } })).status).toBe(400);
    expect(
      (await app.post('/v1/reflexes', ws.key, { name: 'x', type: 'sensory', metadata: { handler: 'calculator' } }))
        .status,
    ).toBe(400);
    expect((await post({ tools: [{ integration_id: 'gmail' }] })).status).toBe(400);
  });

  it('brain scope needs brain_id or X-Brain-Id; an unknown brain is 404', async () => {
    const ws = await buildWorkspace(app);
    const base = { name: 'b', type: 'sensory', scope: 'brain', metadata: { handler: 'current_time' } };
    const noBrain = await app.post('/v1/reflexes', ws.key, base);
    expect(noBrain.status).toBe(400);
    expect(String(noBrain.body.message)).toContain('brain_id');
    const byHeader = await app.post('/v1/reflexes', ws.key, base, ws.brainHeaders);
    expect(Reflex.parse(byHeader.body).brain_id).toBe(ws.brainId);
    const byBody = await app.post('/v1/reflexes', ws.key, { ...base, brain_id: ws.brainId });
    expect(Reflex.parse(byBody.body)).toMatchObject({ brain_id: ws.brainId, scope: 'brain' });
    expect((await app.post('/v1/reflexes', ws.key, { ...base, brain_id: randomUUID() })).status).toBe(404);
    // A brain-scoped reflex is invisible from another brain.
    const b2 = (await app.services.workspaces.ensureBrain(ws.workspaceId, randomUUID(), 'B2'))._id;
    expect((await app.get(`/v1/reflexes/${byBody.body.id as string}`, ws.key, { 'x-brain-id': b2 })).status).toBe(404);
    expect((await app.get(`/v1/reflexes/${byBody.body.id as string}`, ws.key, ws.brainHeaders)).status).toBe(200);
  });

  it('scope roles: workspace needs workspace_admin, core needs core_admin', async () => {
    const ws = await buildWorkspace(app);
    const member = await ws.jwt(['member']);
    const core = await ws.jwt(['core_admin']);
    const denied = await app.post('/v1/reflexes', member, { name: 'm', ...toolsBody });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 'FORBIDDEN' });
    expect(
      (await app.post('/v1/reflexes', member, { name: 'm', ...toolsBody, scope: 'brain' }, ws.brainHeaders)).status,
    ).toBe(201);
    expect((await app.post('/v1/reflexes', ws.key, { name: 'c', ...toolsBody, scope: 'core' })).status).toBe(403);
    const c = await createReflex(ws, { scope: 'core' }, core);
    expect((await app.put(`/v1/reflexes/${c.id}`, ws.key, { description: 'x' })).status).toBe(403);
    const w = await createReflex(ws);
    expect((await app.put(`/v1/reflexes/${w.id}`, ws.key, { scope: 'core' })).status).toBe(403);
    expect((await app.put(`/v1/reflexes/${w.id}`, core, { scope: 'core' })).status).toBe(200);
    expect((await app.del(`/v1/reflexes/${w.id}`, member)).status).toBe(403);
  });

  it('PUT updates, re-checks the implementation rule and accepts scope workspace or core only', async () => {
    const ws = await buildWorkspace(app);
    const r = await createReflex(ws, { name: 'before' });
    const upd = await app.put(`/v1/reflexes/${r.id}`, ws.key, {
      name: 'after',
      is_active: false,
      metadata: { note: 'n' },
    });
    expect(upd.status).toBe(200);
    expect(Reflex.parse(upd.body)).toMatchObject({
      name: 'after',
      is_active: false,
      metadata: { note: 'n' },
      tools: r.tools,
    });
    const emptied = await app.put(`/v1/reflexes/${r.id}`, ws.key, { tools: [] });
    expect(emptied.status).toBe(400);
    expect(String(emptied.body.message)).toContain('a reflex must define');
    expect(
      (await app.put(`/v1/reflexes/${r.id}`, ws.key, { tools: [], metadata: { handler: 'calculator' } })).status,
    ).toBe(200);
    expect((await app.put(`/v1/reflexes/${r.id}`, ws.key, { scope: 'brain' })).status).toBe(400);
    expect((await app.put(`/v1/reflexes/${r.id}`, ws.key, {})).status).toBe(400);
    expect((await app.put(`/v1/reflexes/${randomUUID()}`, ws.key, { name: 'x' })).status).toBe(404);
    expect((await app.get('/v1/reflexes/not-a-uuid', ws.key)).status).toBe(400);
  });

  it('GET /v1/reflexes filters by type and search, sorts and pages', async () => {
    const ws = await buildWorkspace(app);
    await createReflex(ws, { name: 'alpha', type: 'sensory', description: 'reads the inbox' });
    await createReflex(ws, { name: 'bravo', type: 'effector' });
    await createReflex(ws, { name: 'charlie', type: 'effector', description: 'Inbox writer' });
    const get = async (qs: string) => {
      const r = await app.get(`/v1/reflexes${qs}`, ws.key);
      expect(r.status, qs).toBe(200);
      return ReflexList.parse(r.body);
    };
    const all = await get('');
    expect(all).toMatchObject({ total: 3, limit: 20, offset: 0, has_more: false });
    expect(all.reflexes.map((r) => r.name)).toEqual(['charlie', 'bravo', 'alpha']);
    expect((await get('?type=effector&sortBy=name&sortDirection=asc')).reflexes.map((r) => r.name)).toEqual([
      'bravo',
      'charlie',
    ]);
    expect((await get('?search=inbox&sortBy=name&sortDirection=asc')).reflexes.map((r) => r.name)).toEqual([
      'alpha',
      'charlie',
    ]);
    expect(await get('?limit=2&offset=0')).toMatchObject({ has_more: true, limit: 2 });
    expect((await app.get('/v1/reflexes?type=motor', ws.key)).status).toBe(400);
    expect((await app.get('/v1/reflexes?sortDirection=up', ws.key)).status).toBe(400);
  });

  it('DELETE removes the reflex and its neuron links', async () => {
    const ws = await buildWorkspace(app);
    const r = await createReflex(ws);
    const n = await createNeuron(ws);
    expect((await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: r.id })).status).toBe(201);
    const del = await app.del(`/v1/reflexes/${r.id}`, ws.key);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await app.get(`/v1/reflexes/${r.id}`, ws.key)).status).toBe(404);
    expect((await app.get(`/v1/neurons/${n.id}/reflexes`, ws.key)).body).toEqual([]);
    expect(await app.deps.db.collection('neuron_reflexes').countDocuments({ reflexId: r.id })).toBe(0);
    expect((await app.del(`/v1/reflexes/${r.id}`, ws.key)).status).toBe(404);
  });
});

describe('neuron–reflex associations', () => {
  it('assign, list, 409 on a second assignment, unassign, 404 when not linked', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'Assistant');
    const r1 = await createReflex(ws, { name: 'first' });
    const r2 = await createReflex(ws, {
      name: 'second',
      type: 'sensory',
      metadata: { handler: 'calculator' },
      tools: [],
    });
    expect((await app.get(`/v1/neurons/${n.id}/reflexes`, ws.key)).body).toEqual([]);
    const a = await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: r1.id });
    expect(a.status).toBe(201);
    expect(NeuronReflexAssignment.parse(a.body)).toMatchObject({ neuron_id: n.id, reflex_id: r1.id });
    expect(
      (await app.post('/v1/neurons/assistant/reflexes', ws.key, { reflex_id: r2.id }, ws.brainHeaders)).status,
    ).toBe(201);
    const dup = await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: r1.id });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ code: 'CONFLICT' });
    const listed = await app.get<unknown[]>(`/v1/neurons/${n.id}/reflexes`, ws.key);
    expect(listed.body.map((x) => NeuronReflexSummary.parse(x))).toEqual([
      { id: r1.id, name: 'first', type: 'effector', is_active: true, created_at: r1.created_at },
      { id: r2.id, name: 'second', type: 'sensory', is_active: true, created_at: r2.created_at },
    ]);
    const forRun = await app.services.reflexes.forNeuron(systemScope(ws.workspaceId), n.id);
    expect(forRun.map((r) => r._id)).toEqual([r1.id, r2.id]);

    const un = await app.del(`/v1/neurons/${n.id}/reflexes/${r1.id}`, ws.key);
    expect(un.status).toBe(200);
    expect(un.body).toEqual({ success: true });
    expect((await app.del(`/v1/neurons/${n.id}/reflexes/${r1.id}`, ws.key)).status).toBe(404);
    expect((await app.get<unknown[]>(`/v1/neurons/${n.id}/reflexes`, ws.key)).body).toHaveLength(1);
  });

  it('404 for an unknown neuron or reflex, 400 for a bad reflex_id; deleting the neuron drops its links', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws);
    const r = await createReflex(ws);
    expect((await app.post(`/v1/neurons/${randomUUID()}/reflexes`, ws.key, { reflex_id: r.id })).status).toBe(404);
    const unknownReflex = await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: randomUUID() });
    expect(unknownReflex.status).toBe(404);
    expect(unknownReflex.body).toMatchObject({ code: 'NOT_FOUND' });
    expect((await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: 'nope' })).status).toBe(400);
    expect((await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, {})).status).toBe(400);
    expect((await app.get(`/v1/neurons/${randomUUID()}/reflexes`, ws.key)).status).toBe(404);
    expect((await app.del(`/v1/neurons/${n.id}/reflexes/not-a-uuid`, ws.key)).status).toBe(400);
    await app.post(`/v1/neurons/${n.id}/reflexes`, ws.key, { reflex_id: r.id });
    expect((await app.del(`/v1/neurons/${n.id}`, ws.key)).status).toBe(200);
    expect(await app.deps.db.collection('neuron_reflexes').countDocuments({ neuronId: n.id })).toBe(0);
    expect((await app.get(`/v1/reflexes/${r.id}`, ws.key)).status).toBe(200);
  });
});

describe('reflexes: tenancy and auth', () => {
  it("another workspace's reflex or neuron is 404", async () => {
    const a = await buildWorkspace(app);
    const b = await buildWorkspace(app);
    const r = await createReflex(a);
    const n = await createNeuron(a);
    const theirNeuron = await createNeuron(b);
    for (const [method, path, body] of [
      ['GET', `/v1/reflexes/${r.id}`],
      ['PUT', `/v1/reflexes/${r.id}`, { name: 'x' }],
      ['DELETE', `/v1/reflexes/${r.id}`],
      ['GET', `/v1/neurons/${n.id}/reflexes`],
      ['POST', `/v1/neurons/${n.id}/reflexes`, { reflex_id: r.id }],
      ['POST', `/v1/neurons/${theirNeuron.id}/reflexes`, { reflex_id: r.id }],
      ['DELETE', `/v1/neurons/${n.id}/reflexes/${r.id}`],
    ] as [string, string, unknown?][]) {
      const res = await app.request(method, path, { auth: b.key, body });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect(ReflexList.parse((await app.get('/v1/reflexes', b.key)).body).total).toBe(0);
  });

  it('401 without a valid credential on every route', async () => {
    const id = randomUUID();
    for (const [method, path] of [
      ['GET', '/v1/reflexes'],
      ['GET', `/v1/reflexes/${id}`],
      ['POST', '/v1/reflexes'],
      ['PUT', `/v1/reflexes/${id}`],
      ['DELETE', `/v1/reflexes/${id}`],
      ['GET', `/v1/neurons/${id}/reflexes`],
      ['POST', `/v1/neurons/${id}/reflexes`],
      ['DELETE', `/v1/neurons/${id}/reflexes/${id}`],
    ]) {
      const r = await app.request(method, path, {
        body: method === 'POST' || method === 'PUT' ? { name: 'x' } : undefined,
      });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.body).toMatchObject({ code: 'AUTH_REQUIRED' });
    }
  });
});
