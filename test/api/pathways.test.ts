import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PATHWAY_VERSION_CAP } from '../../src/pathways/model.js';
import {
  CheckRoleResult,
  Participant,
  Pathway,
  PathwayCompilation,
  PathwayList,
  PathwayValidation,
  PathwayVersion,
  PathwayVersionList,
} from '../../src/pathways/schemas.js';
import { systemScope } from '../../src/kernel/scope.js';
import { buildWorkspace, useTestApp } from '../support/app.js';

const app = useTestApp();
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

/** start → output, a valid id-based graph. */
const simpleGraph = (extra: Record<string, unknown>[] = []) => ({
  nodes: [{ id: 'start', type: 'start', data: {} }, { id: 'out', type: 'output', data: {} }, ...extra],
  edges: [{ id: 'e1', source: 'start', target: 'out' }],
});

/** A neuron doc written straight into the neurons collection (the pathways family only reads it). */
async function insertNeuron(workspaceId: string, brainId: string, over: Record<string, unknown> = {}): Promise<string> {
  const id = randomUUID();
  await app.deps.db.collection('neurons').insertOne({
    _id: id as never,
    workspaceId,
    brainId,
    name: `n-${id.slice(0, 8)}`,
    scope: 'brain',
    deletedAt: null,
    createdAt: new Date(),
    ...over,
  });
  return id;
}

async function createPathway(ws: Ws, body: Record<string, unknown> = {}) {
  const res = await app.post(
    '/v1/pathways',
    ws.key,
    { name: 'Flow', pathway_graph: simpleGraph(), ...body },
    ws.brainHeaders,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return Pathway.parse(res.body);
}

describe('pathways CRUD', () => {
  it('POST creates version 1 in the caller brain; GET returns it with latest_version and version', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await insertNeuron(ws.workspaceId, ws.brainId);
    const graph = {
      nodes: [
        { id: 'start', type: 'start', data: {} },
        { id: 'n', type: 'neuron', data: { neuron_id: neuronId }, position: { x: 1, y: 2 } },
      ],
      edges: [{ id: 'e1', source: 'start', target: 'n' }],
    };
    const data = {
      nodes: [{ id: 'n', position: { x: 1.5, y: -2 }, data: { 'a.b': [[1, 2], [3]], $k: { 'x.y': null } } }],
      edges: [[0, 1]],
      viewport: { zoom: 0.75 },
    };
    const created = await createPathway(ws, {
      name: 'Onboarding',
      description: 'desc',
      pathway_graph: graph,
      pathway_data: data,
    });
    expect(created).toMatchObject({
      name: 'Onboarding',
      description: 'desc',
      is_active: true,
      latest_version: 1,
      version: 1,
      brain_id: ws.brainId,
      workspace_id: ws.workspaceId,
      created_by: ws.apiKeyId,
    });
    expect(created.pathway_graph).toEqual(graph);
    expect(created.pathway_data).toEqual(data);

    const got = await app.get(`/v1/pathways/${created.id}`, ws.key);
    expect(got.status).toBe(200);
    const p = Pathway.parse(got.body);
    expect(p.pathway_data).toEqual(data);
    expect(p.pathway_graph).toEqual(graph);
    expect(p).toMatchObject({ latest_version: 1, version: 1 });
    // With the brain header it must be the pathway's brain.
    expect((await app.get(`/v1/pathways/${created.id}`, ws.key, ws.brainHeaders)).status).toBe(200);

    const bare = await createPathway(ws, { name: 'Bare', pathway_graph: undefined, is_active: false });
    expect(bare).toMatchObject({
      pathway_graph: { nodes: [], edges: [] },
      pathway_data: null,
      is_active: false,
      description: '',
    });
  });

  it('POST validates the body and the graph (400 with the first errors) and needs the brain header', async () => {
    const ws = await buildWorkspace(app);
    const noName = await app.post('/v1/pathways', ws.key, { description: 'x' }, ws.brainHeaders);
    expect(noName.status).toBe(400);
    expect(noName.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(noName.body.message)).toContain('name');
    expect((await app.post('/v1/pathways', ws.key, { name: 'x', pathway_graph: 'nope' }, ws.brainHeaders)).status).toBe(
      400,
    );
    expect((await app.post('/v1/pathways', ws.key, { name: 'x' })).status).toBe(400);
    expect((await app.post('/v1/pathways', ws.key, { name: 'x' }, { 'x-brain-id': randomUUID() })).status).toBe(404);

    const bad = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'x', pathway_graph: { nodes: [{ id: 'a', type: 'teleport', data: {} }], edges: [] } },
      ws.brainHeaders,
    );
    expect(bad.status).toBe(400);
    expect(String(bad.body.message)).toMatch(/pathway_graph is invalid: .*unknown type "teleport"/);

    const missing = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'x',
        pathway_graph: { nodes: [{ id: 'a', type: 'neuron', data: { neuron_id: randomUUID() } }], edges: [] },
      },
      ws.brainHeaders,
    );
    expect(missing.status).toBe(400);
    expect(String(missing.body.message)).toContain('foreign or missing neuron');

    const huge = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'x', pathway_graph: { nodes: [], edges: [], blob: 'x'.repeat(210_000) } },
      ws.brainHeaders,
    );
    expect(huge.status).toBe(400);
    expect(String(huge.body.message)).toContain('pathway_graph: larger than');

    const indexForm = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'x', pathway_graph: { nodes: [{ type: 'start', data: {} }], edges: [[0, -1]] } },
      ws.brainHeaders,
    );
    expect(indexForm.status).toBe(400);
    expect(String(indexForm.body.message)).toContain('id-based');
  });

  it('lists by brain with createdBy, search, sort, paging and has_more; 400 without the brain header', async () => {
    const ws = await buildWorkspace(app);
    const otherBrain = randomUUID();
    await app.deps.repos.workspaces.ensureBrain(ws.workspaceId, otherBrain, 'Other');
    const user = randomUUID();
    const jwt = await ws.jwt(['member'], user);
    await createPathway(ws, { name: 'Alpha report' });
    await createPathway(ws, { name: 'beta Report' });
    const byUser = await app.post('/v1/pathways', jwt, { name: 'Gamma' }, ws.brainHeaders);
    expect(byUser.status).toBe(201);
    expect(
      (await app.post('/v1/pathways', ws.key, { name: 'Elsewhere report' }, { 'x-brain-id': otherBrain })).status,
    ).toBe(201);

    const noBrain = await app.get('/v1/pathways', ws.key);
    expect(noBrain.status).toBe(400);
    expect(noBrain.body).toMatchObject({ code: 'VALIDATION_ERROR' });

    const all = PathwayList.parse(
      (await app.get('/v1/pathways?sortBy=name&sortDirection=asc', ws.key, ws.brainHeaders)).body,
    );
    expect(all.pathways.map((p) => p.name)).toEqual(['Alpha report', 'Gamma', 'beta Report']);
    expect(all).toMatchObject({ total: 3, limit: 20, offset: 0, has_more: false });

    const search = PathwayList.parse((await app.get('/v1/pathways?search=REPORT', ws.key, ws.brainHeaders)).body);
    expect(search.pathways.map((p) => p.name).sort()).toEqual(['Alpha report', 'beta Report']);
    const regexSafe = PathwayList.parse(
      (await app.get(`/v1/pathways?search=${encodeURIComponent('.*')}`, ws.key, ws.brainHeaders)).body,
    );
    expect(regexSafe.total).toBe(0);

    const mine = PathwayList.parse((await app.get(`/v1/pathways?createdBy=${user}`, ws.key, ws.brainHeaders)).body);
    expect(mine.pathways.map((p) => p.name)).toEqual(['Gamma']);

    const page = PathwayList.parse(
      (await app.get('/v1/pathways?limit=2&offset=0&sortBy=created_at&sortDirection=desc', ws.key, ws.brainHeaders))
        .body,
    );
    expect(page.pathways.map((p) => p.name)).toEqual(['Gamma', 'beta Report']);
    expect(page).toMatchObject({ total: 3, limit: 2, has_more: true });
    const page2 = PathwayList.parse((await app.get('/v1/pathways?limit=2&offset=2', ws.key, ws.brainHeaders)).body);
    expect(page2.has_more).toBe(false);

    expect((await app.get('/v1/pathways?sortBy=size', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/pathways?createdBy=me', ws.key, ws.brainHeaders)).status).toBe(400);
  });

  it('PUT records a version on graph, name or description change only; pathway_data and is_active do not', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws);
    const put = (body: Record<string, unknown>) => app.put(`/v1/pathways/${p.id}`, ws.key, body);

    const g2 = simpleGraph([{ id: 'x', type: 'transform', data: { expression: 'input' } }]);
    g2.edges = [
      { id: 'e1', source: 'start', target: 'x' },
      { id: 'e2', source: 'x', target: 'out' },
    ];
    const r1 = await put({ pathway_graph: g2 });
    expect(r1.status).toBe(200);
    expect(Pathway.parse(r1.body)).toMatchObject({ latest_version: 2, version: 2, pathway_graph: g2 });
    expect(Pathway.parse((await put({ pathway_graph: g2 })).body).latest_version).toBe(2); // identical graph: no version
    expect(Pathway.parse((await put({ pathway_data: { nodes: [], 'k.1': [[0]] } })).body)).toMatchObject({
      latest_version: 2,
      pathway_data: { nodes: [], 'k.1': [[0]] },
    });
    expect(Pathway.parse((await put({ is_active: false })).body)).toMatchObject({
      latest_version: 2,
      is_active: false,
    });
    expect(Pathway.parse((await put({ name: 'Renamed' })).body)).toMatchObject({ latest_version: 3, name: 'Renamed' });
    expect(Pathway.parse((await put({ description: 'now described' })).body)).toMatchObject({
      latest_version: 4,
      description: 'now described',
    });

    const hist = PathwayVersionList.parse((await app.get(`/v1/pathways/${p.id}/versions`, ws.key)).body);
    expect(hist.latest_version).toBe(4);
    expect(hist.versions.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    expect(hist.versions.map((v) => v.note)).toEqual([
      'updated: description',
      'updated: name',
      'updated: graph',
      'created',
    ]);
    expect(hist.versions.map((v) => v.node_count)).toEqual([3, 3, 3, 2]);
    expect(hist.versions[0].created_by).toBe(ws.apiKeyId);

    const v1 = await app.get(`/v1/pathways/${p.id}/versions/1`, ws.key);
    expect(v1.status).toBe(200);
    expect(PathwayVersion.parse(v1.body)).toMatchObject({
      version: 1,
      latest_version: 4,
      name: 'Flow',
      pathway_graph: simpleGraph(),
      node_count: 2,
    });

    // Concurrent saves each get their own version (optimistic concurrency on latest_version).
    const statuses = await Promise.all([1, 2, 3, 4, 5].map((i) => put({ name: `Concurrent ${i}` })));
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const after = PathwayVersionList.parse((await app.get(`/v1/pathways/${p.id}/versions`, ws.key)).body);
    expect(after.latest_version).toBe(9);
    expect(after.versions.map((v) => v.version)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1]);

    expect((await put({})).status).toBe(400);
    expect((await put({ name: '' })).status).toBe(400);
    expect((await put({ pathway_graph: { nodes: [{ id: 'a', type: 'nope' }] } })).status).toBe(400);
    expect((await app.put(`/v1/pathways/${randomUUID()}`, ws.key, { name: 'x' })).status).toBe(404);
  });

  it('GET /versions/:version: 400 for a non-positive-integer, 404 for a version not kept', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws);
    for (const v of ['0', '-1', 'abc', '1.5'])
      expect((await app.get(`/v1/pathways/${p.id}/versions/${v}`, ws.key)).status).toBe(400);
    const missing = await app.get(`/v1/pathways/${p.id}/versions/7`, ws.key);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ message: 'Pathway version not found', code: 'NOT_FOUND' });
  });

  it(`keeps only the last ${PATHWAY_VERSION_CAP} versions while latest_version keeps counting`, async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws);
    const scope = systemScope(ws.workspaceId, ws.brainId);
    for (let i = 2; i <= 55; i++) await app.services.pathways.update(scope, p.id, { name: `Flow ${i}` });
    const hist = PathwayVersionList.parse((await app.get(`/v1/pathways/${p.id}/versions`, ws.key)).body);
    expect(hist.latest_version).toBe(55);
    expect(hist.versions).toHaveLength(PATHWAY_VERSION_CAP);
    expect(hist.versions[0].version).toBe(55);
    expect(hist.versions.at(-1)?.version).toBe(6);
    expect((await app.get(`/v1/pathways/${p.id}/versions/5`, ws.key)).status).toBe(404);
    expect(PathwayVersion.parse((await app.get(`/v1/pathways/${p.id}/versions/6`, ws.key)).body).name).toBe('Flow 6');
    expect(Pathway.parse((await app.get(`/v1/pathways/${p.id}`, ws.key)).body)).toMatchObject({
      latest_version: 55,
      version: 55,
      name: 'Flow 55',
    });
  });

  it('promote makes an old graph the tip as a new version entry', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws);
    const g2 = { nodes: [{ id: 'only', type: 'output', data: {} }], edges: [] };
    await app.put(`/v1/pathways/${p.id}`, ws.key, { pathway_graph: g2, name: 'Second' });

    const res = await app.post(`/v1/pathways/${p.id}/versions/1/promote`, ws.key);
    expect(res.status).toBe(200);
    expect(Pathway.parse(res.body)).toMatchObject({
      latest_version: 3,
      version: 3,
      pathway_graph: simpleGraph(),
      name: 'Second',
    });
    const hist = PathwayVersionList.parse((await app.get(`/v1/pathways/${p.id}/versions`, ws.key)).body);
    expect(hist.versions[0]).toMatchObject({ version: 3, note: 'promoted from v1', node_count: 2 });

    const withWs = await app.post(`/v1/pathways/${p.id}/versions/2/promote`, ws.key, { workspace_id: ws.workspaceId });
    expect(Pathway.parse(withWs.body)).toMatchObject({ latest_version: 4, pathway_graph: g2 });
    const wrongWs = await app.post(`/v1/pathways/${p.id}/versions/1/promote`, ws.key, { workspace_id: randomUUID() });
    expect(wrongWs.status).toBe(403);
    expect(wrongWs.body).toMatchObject({ code: 'FORBIDDEN' });
    expect((await app.post(`/v1/pathways/${p.id}/versions/1/promote`, ws.key, { workspace_id: 'nope' })).status).toBe(
      400,
    );
    expect((await app.post(`/v1/pathways/${p.id}/versions/9/promote`, ws.key)).status).toBe(404);
    expect((await app.post(`/v1/pathways/${p.id}/versions/0/promote`, ws.key)).status).toBe(400);
  });

  it('DELETE removes the pathway and its participants', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws);
    await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: randomUUID(), role: 'editor' });
    const del = await app.del(`/v1/pathways/${p.id}`, ws.key);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await app.get(`/v1/pathways/${p.id}`, ws.key)).status).toBe(404);
    expect(await app.deps.db.collection('pathway_participants').countDocuments({ pathwayId: p.id })).toBe(0);
    expect((await app.del(`/v1/pathways/${p.id}`, ws.key)).status).toBe(404);
  });

  it('404 for another workspace or another brain; 401 without a credential', async () => {
    const a = await buildWorkspace(app);
    const b = await buildWorkspace(app);
    const p = await createPathway(a);
    const paths = [
      `/v1/pathways/${p.id}`,
      `/v1/pathways/${p.id}/versions`,
      `/v1/pathways/${p.id}/versions/1`,
      `/v1/pathways/${p.id}/participants`,
    ];
    for (const path of paths) {
      const r = await app.get(path, b.key);
      expect(r.status, path).toBe(404);
    }
    expect((await app.get(`/v1/pathways/${p.id}`, b.key)).body).toEqual({
      message: 'Pathway not found',
      code: 'NOT_FOUND',
    });
    expect((await app.put(`/v1/pathways/${p.id}`, b.key, { name: 'x' })).status).toBe(404);
    expect((await app.del(`/v1/pathways/${p.id}`, b.key)).status).toBe(404);
    expect((await app.post(`/v1/pathways/${p.id}/versions/1/promote`, b.key)).status).toBe(404);
    expect((await app.post(`/v1/pathways/${p.id}/participants`, b.key, { user_id: randomUUID() })).status).toBe(404);
    expect(
      (await app.get(`/v1/pathways/${p.id}/participants/check-role?user_id=${randomUUID()}&role=viewer`, b.key)).status,
    ).toBe(404);
    expect(PathwayList.parse((await app.get('/v1/pathways', b.key, b.brainHeaders)).body).total).toBe(0);

    const otherBrain = randomUUID();
    await app.deps.repos.workspaces.ensureBrain(a.workspaceId, otherBrain, 'Other');
    expect((await app.get(`/v1/pathways/${p.id}`, a.key, { 'x-brain-id': otherBrain })).status).toBe(404);
    expect((await app.put(`/v1/pathways/${p.id}`, a.key, { name: 'x' }, { 'x-brain-id': otherBrain })).status).toBe(
      404,
    );

    expect((await app.get(`/v1/pathways/${p.id}`)).status).toBe(401);
    expect((await app.get('/v1/pathways', undefined, a.brainHeaders)).body).toMatchObject({ code: 'AUTH_REQUIRED' });
    expect((await app.post('/v1/pathways', 'ctx_wrong', { name: 'x' }, a.brainHeaders)).status).toBe(401);
    expect((await app.post('/v1/pathways/validate', undefined, {})).status).toBe(401);
    expect((await app.post('/v1/pathways/compile', undefined, { pathway: {} })).status).toBe(401);
    expect((await app.del(`/v1/pathways/participants/${randomUUID()}`)).status).toBe(401);
    expect((await app.get('/v1/pathways/not-a-uuid', a.key)).status).toBe(400);
  });
});

describe('getForRun and neuronIdsFor', () => {
  it('resolves the tip or a kept version, and hides other brains, missing brains and inactive heads', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws);
    const scope = systemScope(ws.workspaceId, ws.brainId);
    await app.services.pathways.update(scope, p.id, {
      pathway_graph: { nodes: [{ id: 'o', type: 'output', data: {} }], edges: [] },
    });
    const tip = await app.services.pathways.getForRun(scope, p.id);
    expect(tip.version).toBe(2);
    expect(tip.graph).toEqual({ nodes: [{ id: 'o', type: 'output', data: {} }], edges: [] });
    expect((await app.services.pathways.getForRun(scope, p.id, 1)).graph).toEqual(simpleGraph());

    const notFound = { status: 404, code: 'NOT_FOUND', message: 'Pathway not found' };
    await expect(app.services.pathways.getForRun(systemScope(ws.workspaceId), p.id)).rejects.toMatchObject(notFound);
    await expect(
      app.services.pathways.getForRun(systemScope(ws.workspaceId, randomUUID()), p.id),
    ).rejects.toMatchObject(notFound);
    await expect(app.services.pathways.getForRun(systemScope(randomUUID(), ws.brainId), p.id)).rejects.toMatchObject(
      notFound,
    );
    await app.services.pathways.update(scope, p.id, { is_active: false });
    await expect(app.services.pathways.getForRun(scope, p.id)).rejects.toMatchObject(notFound);
    expect((await app.services.pathways.getForRun(scope, p.id, 2)).version).toBe(2);
    await expect(app.services.pathways.getForRun(scope, p.id, 9)).rejects.toMatchObject({ status: 404 });
  });

  it("neuronIdsFor: the brain's own plus workspace/core neurons, never deleted or foreign ones", async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const own = await insertNeuron(ws.workspaceId, ws.brainId);
    const wide = await insertNeuron(ws.workspaceId, randomUUID(), { scope: 'workspace' });
    const otherBrain = await insertNeuron(ws.workspaceId, randomUUID());
    const deleted = await insertNeuron(ws.workspaceId, ws.brainId, { deletedAt: new Date() });
    const foreign = await insertNeuron(other.workspaceId, other.brainId, { scope: 'workspace' });
    const ids = await app.services.pathways.neuronIdsFor(systemScope(ws.workspaceId, ws.brainId));
    expect([own, wide, otherBrain, deleted, foreign].map((id) => ids.has(id))).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    const noBrain = await app.services.pathways.neuronIdsFor(systemScope(ws.workspaceId));
    expect(noBrain.has(otherBrain)).toBe(true);
    expect(noBrain.has(foreign)).toBe(false);
  });
});

describe('validate and compile', () => {
  it('POST /v1/pathways/validate reports unknown type, missing and foreign neurons and unreachable nodes (always 200)', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const own = await insertNeuron(ws.workspaceId, ws.brainId);
    const foreign = await insertNeuron(other.workspaceId, other.brainId);
    const missing = randomUUID();

    const ok = await app.post('/v1/pathways/validate', ws.key, {
      nodes: [
        { id: 's', type: 'start', data: {} },
        { id: 'n', type: 'neuron', data: { neuron_id: own } },
      ],
      edges: [{ id: 'e', source: 's', target: 'n' }],
    });
    expect(ok.status).toBe(200);
    expect(PathwayValidation.parse(ok.body)).toEqual({ valid: true });

    const res = await app.post(
      '/v1/pathways/validate',
      ws.key,
      {
        nodes: [
          { id: 's', type: 'start', data: {} },
          { id: 'a', type: 'neuron', data: { neuron_id: missing } },
          { id: 'b', type: 'neuron', data: { neuron_id: foreign } },
          { id: 'c', type: 'warp', data: {} },
          { id: 'lost', type: 'output', data: {} },
        ],
        edges: [
          { id: 'e1', source: 's', target: 'a' },
          { id: 'e2', source: 'a', target: 'b' },
          { id: 'e3', source: 'b', target: 'c' },
        ],
      },
      ws.brainHeaders,
    );
    expect(res.status).toBe(200);
    const v = PathwayValidation.parse(res.body);
    expect(v.valid).toBe(false);
    const errors = v.errors ?? [];
    expect(errors.some((e) => e.includes('unknown type "warp"'))).toBe(true);
    expect(errors.some((e) => e.includes(`foreign or missing neuron "${missing}"`))).toBe(true);
    expect(errors.some((e) => e.includes(`foreign or missing neuron "${foreign}"`))).toBe(true);
    expect((v.warnings ?? []).some((w) => w.includes('"lost"') && w.includes('never runs'))).toBe(true);

    const empty = PathwayValidation.parse((await app.post('/v1/pathways/validate', ws.key, {})).body);
    expect(empty.valid).toBe(true);
    expect(empty.warnings?.[0]).toContain('no nodes');
    const malformedNodes = await app.post('/v1/pathways/validate', ws.key, { nodes: [{ type: 'start' }, { id: 'x' }] });
    expect(malformedNodes.status).toBe(200);
    expect(PathwayValidation.parse(malformedNodes.body).valid).toBe(false);
    expect((await app.post('/v1/pathways/validate', ws.key, { nodes: 'x' })).status).toBe(400);
  });

  it('POST /v1/pathways/compile returns index edges with -1 terminals and the preview input', async () => {
    const ws = await buildWorkspace(app);
    const res = await app.post('/v1/pathways/compile', ws.key, {
      pathway: {
        nodes: [
          { id: 'out', type: 'output', data: {} },
          { id: 'check', type: 'if', data: { condition: 'input.ok' } },
          { id: 's', type: 'start', data: {} },
        ],
        edges: [
          { id: 'e1', source: 's', target: 'check' },
          { id: 'e2', source: 'check', target: 'out', handle: 'true' },
        ],
      },
      payload: { ok: true, list: [[1]] },
      overrides: { check: { condition: 'input.ok == true' } },
    });
    expect(res.status).toBe(200);
    const c = PathwayCompilation.parse(res.body);
    expect(c.compiled.nodes.map((n) => n.type)).toEqual(['start', 'output', 'if']);
    expect(c.compiled.nodes[2].data).toEqual({ condition: 'input.ok == true' });
    expect(c.compiled.edges).toEqual([
      [0, 2],
      [1, -1],
      [2, 1, 'true'],
      [2, -1, 'false'],
    ]);
    expect(c.preview).toEqual({ input: { ok: true, list: [[1]] } });
    expect(c.errors?.some((e) => e.includes('"false"'))).toBe(true);

    const noPreview = PathwayCompilation.parse(
      (await app.post('/v1/pathways/compile', ws.key, { pathway: simpleGraph() })).body,
    );
    expect(noPreview.preview).toBeUndefined();
    expect(noPreview.errors).toBeUndefined();
    expect(noPreview.compiled.edges).toEqual([
      [0, 1],
      [1, -1],
    ]);
    expect((await app.post('/v1/pathways/compile', ws.key, {})).status).toBe(400);
  });
});

describe('participants', () => {
  it('lists, adds (409 on duplicates), updates, checks roles and removes by user or by participant id', async () => {
    const ws = await buildWorkspace(app);
    const creator = randomUUID();
    const created = await app.post(
      '/v1/pathways',
      await ws.jwt(['member'], creator),
      { name: 'Shared', pathway_graph: simpleGraph() },
      ws.brainHeaders,
    );
    const p = Pathway.parse(created.body);

    const initial = await app.get<{ participants: unknown[] }>(`/v1/pathways/${p.id}/participants`, ws.key);
    const owners = initial.body.participants.map((x) => Participant.parse(x));
    expect(owners).toHaveLength(1);
    expect(owners[0]).toMatchObject({ user_id: creator, role: 'owner', pathway_id: p.id, added_by: creator });

    const u1 = randomUUID();
    const add = await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: u1 });
    expect(add.status).toBe(201);
    const part = Participant.parse(add.body.participant);
    expect(part).toMatchObject({ user_id: u1, role: 'viewer', added_by: ws.apiKeyId });
    const dup = await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: u1, role: 'editor' });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ code: 'CONFLICT' });
    expect((await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: 'x' })).status).toBe(400);
    expect(
      (await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: randomUUID(), role: 'admin' })).status,
    ).toBe(400);

    const check = async (userId: string, role: string) =>
      CheckRoleResult.parse(
        (await app.get(`/v1/pathways/${p.id}/participants/check-role?user_id=${userId}&role=${role}`, ws.key)).body,
      );
    expect(await check(u1, 'viewer')).toEqual({ user_id: u1, role: 'viewer', required_role: 'viewer', allowed: true });
    expect((await check(u1, 'editor')).allowed).toBe(false);
    expect(await check(creator, 'editor')).toMatchObject({ role: 'owner', allowed: true });
    const stranger = randomUUID();
    expect(await check(stranger, 'viewer')).toEqual({
      user_id: stranger,
      role: null,
      required_role: 'viewer',
      allowed: false,
    });
    expect((await app.get(`/v1/pathways/${p.id}/participants/check-role?user_id=${u1}`, ws.key)).status).toBe(400);

    const upd = await app.put(`/v1/pathways/participants/${part.id}`, ws.key, { role: 'editor' });
    expect(upd.status).toBe(200);
    expect(Participant.parse(upd.body.participant).role).toBe('editor');
    expect((await check(u1, 'editor')).allowed).toBe(true);
    expect((await app.put(`/v1/pathways/participants/${part.id}`, ws.key, { role: 'boss' })).status).toBe(400);
    expect((await app.put(`/v1/pathways/participants/${randomUUID()}`, ws.key, { role: 'viewer' })).status).toBe(404);

    const delByUser = await app.del(`/v1/pathways/${p.id}/participants/${u1}`, ws.key);
    expect(delByUser.status).toBe(200);
    expect(delByUser.body).toEqual({ success: true });
    expect((await app.del(`/v1/pathways/${p.id}/participants/${u1}`, ws.key)).status).toBe(404);

    const u2 = Participant.parse(
      (await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id: randomUUID() })).body.participant,
    );
    const delById = await app.del(`/v1/pathways/participants/${u2.id}`, ws.key);
    expect(delById.body).toEqual({ success: true });
    expect((await app.del(`/v1/pathways/participants/${u2.id}`, ws.key)).status).toBe(404);

    const other = await buildWorkspace(app);
    expect((await app.put(`/v1/pathways/participants/${owners[0].id}`, other.key, { role: 'viewer' })).status).toBe(
      404,
    );
    expect((await app.del(`/v1/pathways/participants/${owners[0].id}`, other.key)).status).toBe(404);
  });

  it('enforces roles for JWT users: viewer read-only, editor may update but not delete or manage, owner and admins may all', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(ws);
    const [viewer, editor, owner, outsider] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    for (const [user_id, role] of [
      [viewer, 'viewer'],
      [editor, 'editor'],
      [owner, 'owner'],
    ]) {
      expect((await app.post(`/v1/pathways/${p.id}/participants`, ws.key, { user_id, role })).status).toBe(201);
    }
    const jv = await ws.jwt(['member'], viewer);
    const je = await ws.jwt(['member'], editor);
    const jo = await ws.jwt(['member'], owner);
    const jx = await ws.jwt(['member'], outsider);
    const admin = await ws.jwt(['workspace_admin'], randomUUID());

    expect((await app.get(`/v1/pathways/${p.id}`, jv)).status).toBe(200);
    const vPut = await app.put(`/v1/pathways/${p.id}`, jv, { name: 'by viewer' });
    expect(vPut.status).toBe(403);
    expect(vPut.body).toMatchObject({ code: 'FORBIDDEN' });
    expect((await app.del(`/v1/pathways/${p.id}`, jv)).status).toBe(403);
    expect((await app.post(`/v1/pathways/${p.id}/versions/1/promote`, jv)).status).toBe(403);
    expect((await app.post(`/v1/pathways/${p.id}/participants`, jv, { user_id: randomUUID() })).status).toBe(403);
    expect((await app.put(`/v1/pathways/${p.id}`, jx, { name: 'by outsider' })).status).toBe(403);

    expect((await app.put(`/v1/pathways/${p.id}`, je, { name: 'by editor' })).status).toBe(200);
    expect((await app.del(`/v1/pathways/${p.id}`, je)).status).toBe(403);
    expect((await app.post(`/v1/pathways/${p.id}/participants`, je, { user_id: randomUUID() })).status).toBe(403);
    expect((await app.del(`/v1/pathways/${p.id}/participants/${viewer}`, je)).status).toBe(403);

    const parts = (
      await app.get<{ participants: unknown[] }>(`/v1/pathways/${p.id}/participants`, jv)
    ).body.participants.map((x) => Participant.parse(x));
    const viewerPart = parts.find((x) => x.user_id === viewer);
    expect((await app.put(`/v1/pathways/participants/${viewerPart?.id}`, je, { role: 'owner' })).status).toBe(403);
    expect((await app.put(`/v1/pathways/participants/${viewerPart?.id}`, jo, { role: 'editor' })).status).toBe(200);
    expect((await app.put(`/v1/pathways/${p.id}`, jv, { name: 'viewer promoted' })).status).toBe(200);

    expect((await app.put(`/v1/pathways/${p.id}`, admin, { name: 'by admin' })).status).toBe(200);
    expect((await app.del(`/v1/pathways/${p.id}`, jo)).status).toBe(200);
  });
});
