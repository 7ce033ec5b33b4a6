import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Neuron, NeuronList, NeuronVersion, NeuronVersionList } from '../../src/neurons/schemas.js';
import { systemScope } from '../../src/kernel/scope.js';
import { buildWorkspace, useTestApp } from '../support/app.js';

const app = useTestApp();

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function createNeuron(ws: Ws, body: Record<string, unknown> = {}, auth: string = ws.key) {
  const res = await app.post('/v1/neurons', auth, { name: `n-${randomUUID().slice(0, 8)}`, ...body }, ws.brainHeaders);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return Neuron.parse(res.body);
}

const secondBrain = async (ws: Ws) =>
  (await app.services.workspaces.ensureBrain(ws.workspaceId, randomUUID(), 'Second'))._id;

describe('neurons: create', () => {
  it('POST /v1/neurons creates version 1 in the X-Brain-Id brain, with the name normalized to a slug', async () => {
    const ws = await buildWorkspace(app);
    const res = await app.post(
      '/v1/neurons',
      ws.key,
      {
        name: '  Café Helper!! v2 ',
        description: 'helps',
        neuron_config: { model: 'local/echo', system_prompt: 'Purpose: help' },
      },
      ws.brainHeaders,
    );
    expect(res.status).toBe(201);
    const n = Neuron.parse(res.body);
    expect(n).toMatchObject({
      name: 'cafe-helper-v2',
      brain_id: ws.brainId,
      workspace_id: ws.workspaceId,
      description: 'helps',
      is_active: true,
      scope: 'brain',
      version: 1,
      latest_version: 1,
      attached: true,
      redacted: false,
      deleted_at: null,
      neuron_config: { model: 'local/echo', system_prompt: 'Purpose: help' },
    });
    const long = await createNeuron(ws, { name: 'x'.repeat(150) });
    expect(long.name).toHaveLength(100);
  });

  it("brain_id: the body wins over X-Brain-Id; missing → 400; unknown or another workspace's brain → 404", async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const b2 = await secondBrain(ws);
    const byBody = await app.post('/v1/neurons', ws.key, { name: 'a', brain_id: b2 }, ws.brainHeaders);
    expect(Neuron.parse(byBody.body).brain_id).toBe(b2);
    const noBrain = await app.post('/v1/neurons', ws.key, { name: 'b' });
    expect(noBrain.status).toBe(400);
    expect(noBrain.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(noBrain.body.message)).toContain('brain_id');
    expect((await app.post('/v1/neurons', ws.key, { name: 'c', brain_id: randomUUID() })).status).toBe(404);
    expect((await app.post('/v1/neurons', ws.key, { name: 'c', brain_id: other.brainId })).status).toBe(404);
    expect((await app.post('/v1/neurons', ws.key, { name: 'c' }, { 'x-brain-id': randomUUID() })).status).toBe(404);
  });

  it('validates the body: name, neuron_config, engagement_resource_id; unsupported config fields are stripped', async () => {
    const ws = await buildWorkspace(app);
    const post = (body: Record<string, unknown>) => app.post('/v1/neurons', ws.key, body, ws.brainHeaders);
    expect((await post({})).status).toBe(400);
    const punct = await post({ name: '!!!' });
    expect(punct.status).toBe(400);
    expect(String(punct.body.message)).toContain('name');
    expect((await post({ name: 'x', scope: 'galaxy' })).status).toBe(400);
    expect((await post({ name: 'x', neuron_config: { temperature: 5 } })).status).toBe(400);
    expect((await post({ name: 'x', neuron_config: 'nope' })).status).toBe(400);
    const eng = await post({ name: 'x', neuron_config: { engagement_resource_id: randomUUID(), model: 'local/echo' } });
    expect(eng.status).toBe(400);
    expect(eng.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(eng.body.message)).toContain('engagement_resource_id must never be passed');
    const stripped = await createNeuron(ws, {
      neuron_config: { model: 'local/echo', colour: 'blue', nested: { 'a.b': 1 }, neuron_type: 'completion' },
    });
    expect(stripped.neuron_config).toEqual({ model: 'local/echo', neuron_type: 'completion' });
    const got = await app.get(`/v1/neurons/${stripped.id}`, ws.key);
    expect(Neuron.parse(got.body).neuron_config).toEqual({ model: 'local/echo', neuron_type: 'completion' });
  });

  it('409 CONFLICT for a duplicate name in the same brain; the same name in another brain is fine', async () => {
    const ws = await buildWorkspace(app);
    await createNeuron(ws, { name: 'Helper' });
    const dup = await app.post('/v1/neurons', ws.key, { name: 'helper' }, ws.brainHeaders);
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ code: 'CONFLICT' });
    const b2 = await secondBrain(ws);
    expect((await app.post('/v1/neurons', ws.key, { name: 'helper', brain_id: b2 })).status).toBe(201);
    const other = await createNeuron(ws, { name: 'other' });
    const rename = await app.put(`/v1/neurons/${other.id}`, ws.key, { name: 'HELPER' }, ws.brainHeaders);
    expect(rename.status).toBe(409);
  });

  it('sub_neuron_ids must be live neurons of the same brain (400 otherwise), never the neuron itself', async () => {
    const ws = await buildWorkspace(app);
    const child = await createNeuron(ws);
    const b2 = await secondBrain(ws);
    const elsewhere = Neuron.parse((await app.post('/v1/neurons', ws.key, { name: 'far', brain_id: b2 })).body);
    const shared = Neuron.parse(
      (await app.post('/v1/neurons', ws.key, { name: 'shared', brain_id: b2, scope: 'workspace' })).body,
    );
    const ok = await createNeuron(ws, { neuron_config: { sub_neuron_ids: [child.id, shared.id] } });
    expect(ok.neuron_config.sub_neuron_ids).toEqual([child.id, shared.id]);
    const unknown = await app.post(
      '/v1/neurons',
      ws.key,
      { name: 'p1', neuron_config: { sub_neuron_ids: [randomUUID()] } },
      ws.brainHeaders,
    );
    expect(unknown.status).toBe(400);
    expect(String(unknown.body.message)).toContain('sub_neuron_ids');
    expect(
      (
        await app.post(
          '/v1/neurons',
          ws.key,
          { name: 'p2', neuron_config: { sub_neuron_ids: [elsewhere.id] } },
          ws.brainHeaders,
        )
      ).status,
    ).toBe(400);
    expect((await app.put(`/v1/neurons/${ok.id}`, ws.key, { neuron_config: { sub_neuron_ids: [ok.id] } })).status).toBe(
      400,
    );
    expect(
      (
        await app.post(
          '/v1/neurons',
          ws.key,
          { name: 'p3', neuron_config: { sub_neuron_ids: ['nope'] } },
          ws.brainHeaders,
        )
      ).status,
    ).toBe(400);
  });
});

describe('neurons: read, update, versions', () => {
  it("versions: create=1, update=2, ?version=1 gives the old body, promote 1 gives head 3 with v1's body", async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, {
      name: 'versioned',
      description: 'first',
      neuron_config: { system_prompt: 'v1 prompt' },
    });
    const upd = await app.put(`/v1/neurons/${n.id}`, ws.key, {
      description: 'second',
      neuron_config: { system_prompt: 'v2 prompt' },
      is_active: false,
    });
    expect(upd.status).toBe(200);
    expect(Neuron.parse(upd.body)).toMatchObject({
      version: 2,
      latest_version: 2,
      description: 'second',
      is_active: false,
      neuron_config: { system_prompt: 'v2 prompt' },
    });

    const head = Neuron.parse((await app.get(`/v1/neurons/${n.id}`, ws.key)).body);
    expect(head).toMatchObject({ version: 2, description: 'second' });
    const v1 = Neuron.parse((await app.get(`/v1/neurons/${n.id}?version=1`, ws.key)).body);
    expect(v1).toMatchObject({
      version: 1,
      latest_version: 2,
      description: 'first',
      is_active: true,
      neuron_config: { system_prompt: 'v1 prompt' },
    });
    for (const bad of ['abc', '0', '-1', '1.5']) {
      const r = await app.get(`/v1/neurons/${n.id}?version=${bad}`, ws.key);
      expect(r.status, bad).toBe(400);
      expect(r.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    expect((await app.get(`/v1/neurons/${n.id}?version=99`, ws.key)).status).toBe(404);

    const list = NeuronVersionList.parse((await app.get(`/v1/neurons/${n.id}/versions`, ws.key)).body);
    expect(list.latest_version).toBe(2);
    expect(list.versions.map((v) => [v.version, v.is_active, v.name])).toEqual([
      [2, false, 'versioned'],
      [1, true, 'versioned'],
    ]);
    const snap = NeuronVersion.parse((await app.get(`/v1/neurons/${n.id}/versions/1`, ws.key)).body);
    expect(snap).toMatchObject({
      neuron_id: n.id,
      version: 1,
      note: 'created',
      snapshot: { description: 'first', neuron_config: { system_prompt: 'v1 prompt' } },
    });
    expect((await app.get(`/v1/neurons/${n.id}/versions/abc`, ws.key)).status).toBe(400);
    expect((await app.get(`/v1/neurons/${n.id}/versions/7`, ws.key)).status).toBe(404);

    const promoted = await app.post(`/v1/neurons/${n.id}/versions/1/promote`, ws.key);
    expect(promoted.status).toBe(200);
    expect(Neuron.parse(promoted.body)).toMatchObject({
      version: 3,
      latest_version: 3,
      description: 'first',
      is_active: true,
      neuron_config: { system_prompt: 'v1 prompt' },
    });
    expect((await app.post(`/v1/neurons/${n.id}/versions/9/promote`, ws.key)).status).toBe(404);
    expect((await app.post(`/v1/neurons/${n.id}/versions/x/promote`, ws.key)).status).toBe(400);
    const after = NeuronVersionList.parse((await app.get(`/v1/neurons/${n.id}/versions`, ws.key)).body);
    expect(after.versions.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(after.versions[0].note).toBe('promoted from v1');

    // The run engine's view of the same versions.
    const scope = systemScope(ws.workspaceId);
    expect((await app.services.neurons.snapshot(scope, n.id, 2)).neuron_config.system_prompt).toBe('v2 prompt');
    const doc = await app.services.neurons.resolve(scope, n.id);
    expect(app.services.neurons.headSnapshot(doc)).toMatchObject({
      id: n.id,
      version: 3,
      brainId: ws.brainId,
      neuron_config: { system_prompt: 'v1 prompt' },
    });
    await expect(app.services.neurons.snapshot(scope, n.id, 42)).rejects.toMatchObject({ status: 404 });
  });

  it('PUT validates its body and needs at least one field', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws);
    expect((await app.put(`/v1/neurons/${n.id}`, ws.key, {})).status).toBe(400);
    expect((await app.put(`/v1/neurons/${n.id}`, ws.key, { is_active: 'yes' })).status).toBe(400);
    expect((await app.put(`/v1/neurons/${n.id}`, ws.key, { name: '---' })).status).toBe(400);
    expect(
      (await app.put(`/v1/neurons/${n.id}`, ws.key, { neuron_config: { engagement_resource_id: 'x' } })).status,
    ).toBe(400);
    const renamed = await app.put(`/v1/neurons/${n.id}`, ws.key, { name: 'New Name' });
    expect(Neuron.parse(renamed.body)).toMatchObject({ name: 'new-name', version: 2 });
    expect((await app.put(`/v1/neurons/${randomUUID()}`, ws.key, { name: 'x' })).status).toBe(404);
  });

  it("GET /v1/neurons/:id resolves a name or slug segment; the brain's own neuron wins", async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, { name: 'Support Agent' });
    for (const seg of ['support-agent', 'Support%20Agent', 'SUPPORT_AGENT']) {
      const r = await app.get(`/v1/neurons/${seg}`, ws.key, ws.brainHeaders);
      expect(r.status, seg).toBe(200);
      expect(Neuron.parse(r.body).id).toBe(n.id);
    }
    expect((await app.get('/v1/neurons/nobody-here', ws.key, ws.brainHeaders)).status).toBe(404);
    const upd = await app.put('/v1/neurons/support-agent', ws.key, { description: 'via slug' }, ws.brainHeaders);
    expect(Neuron.parse(upd.body).description).toBe('via slug');
    // Same name in a second brain: ambiguous without a brain, resolved with one.
    const b2 = await secondBrain(ws);
    const twin = Neuron.parse((await app.post('/v1/neurons', ws.key, { name: 'support agent', brain_id: b2 })).body);
    expect((await app.get('/v1/neurons/support-agent', ws.key)).status).toBe(400);
    expect(Neuron.parse((await app.get('/v1/neurons/support-agent', ws.key, { 'x-brain-id': b2 })).body).id).toBe(
      twin.id,
    );
    expect(Neuron.parse((await app.get('/v1/neurons/support-agent', ws.key, ws.brainHeaders)).body).id).toBe(n.id);
  });

  it('visibility: a brain sees its own neurons plus workspace- and core-scoped ones', async () => {
    const ws = await buildWorkspace(app);
    const b2 = await secondBrain(ws);
    const own = await createNeuron(ws, { name: 'own' });
    const shared = await createNeuron(ws, { name: 'shared', scope: 'workspace' });
    const h2 = { 'x-brain-id': b2 };
    expect((await app.get(`/v1/neurons/${own.id}`, ws.key, h2)).status).toBe(404);
    expect(Neuron.parse((await app.get(`/v1/neurons/${shared.id}`, ws.key, h2)).body).attached).toBe(false);
    expect(Neuron.parse((await app.get(`/v1/neurons/${own.id}`, ws.key, ws.brainHeaders)).body).attached).toBe(true);
    expect(Neuron.parse((await app.get(`/v1/neurons/${own.id}`, ws.key)).body).attached).toBeNull();
    const list2 = NeuronList.parse((await app.get('/v1/neurons', ws.key, h2)).body);
    expect(list2.neurons.map((x) => x.name)).toEqual(['shared']);
    const scope = { ...systemScope(ws.workspaceId), brainId: b2 };
    expect(
      (await app.services.neurons.findManyVisible(scope, [own.id, shared.id, randomUUID()])).map((d) => d._id),
    ).toEqual([shared.id]);
    await expect(app.services.neurons.resolve(scope, own.id)).rejects.toMatchObject({ status: 404 });
  });

  it('GET /v1/neurons lists with search, sort, paging and has_more; needs X-Brain-Id', async () => {
    const ws = await buildWorkspace(app);
    for (const [name, description] of [
      ['alpha', 'Finds invoices'],
      ['bravo', 'writes poems'],
      ['charlie', 'INVOICE checker'],
    ])
      await createNeuron(ws, { name, description });
    const get = async (qs: string) => {
      const r = await app.get(`/v1/neurons${qs}`, ws.key, ws.brainHeaders);
      expect(r.status, qs).toBe(200);
      return NeuronList.parse(r.body);
    };
    const all = await get('');
    expect(all).toMatchObject({ total: 3, limit: 20, offset: 0, has_more: false });
    expect(all.neurons.map((n) => n.name)).toEqual(['charlie', 'bravo', 'alpha']);
    expect((await get('?sortBy=name&sortDirection=asc')).neurons.map((n) => n.name)).toEqual([
      'alpha',
      'bravo',
      'charlie',
    ]);
    const page = await get('?sortBy=name&sortDirection=asc&limit=2&offset=1');
    expect(page).toMatchObject({ total: 3, limit: 2, offset: 1, has_more: false });
    expect(page.neurons.map((n) => n.name)).toEqual(['bravo', 'charlie']);
    expect((await get('?limit=1')).has_more).toBe(true);
    expect((await get('?search=invoice&sortBy=name&sortDirection=asc')).neurons.map((n) => n.name)).toEqual([
      'alpha',
      'charlie',
    ]);
    expect((await get('?search=brav')).total).toBe(1);
    expect((await get('?search=.*')).total).toBe(0);
    expect((await app.get('/v1/neurons', ws.key)).status).toBe(400);
    expect((await app.get('/v1/neurons?sortBy=bogus', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/neurons?limit=0', ws.key, ws.brainHeaders)).status).toBe(400);
  });
});

describe('neurons: scope roles and core redaction', () => {
  it('workspace scope needs workspace_admin and core scope needs core_admin (403 FORBIDDEN)', async () => {
    const ws = await buildWorkspace(app);
    const member = await ws.jwt(['member']);
    const core = await ws.jwt(['core_admin']);
    const forbidden = await app.post('/v1/neurons', member, { name: 'm1', scope: 'workspace' }, ws.brainHeaders);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ code: 'FORBIDDEN' });
    const mine = await createNeuron(ws, { name: 'm2' }, member);
    expect((await app.put(`/v1/neurons/${mine.id}`, member, { scope: 'workspace' })).status).toBe(403);
    expect((await app.put(`/v1/neurons/${mine.id}`, member, { description: 'fine' })).status).toBe(200);
    expect((await app.post('/v1/neurons', ws.key, { name: 'c1', scope: 'core' }, ws.brainHeaders)).status).toBe(403);
    const toWs = await app.put(`/v1/neurons/${mine.id}`, ws.key, { scope: 'workspace' });
    expect(Neuron.parse(toWs.body).scope).toBe('workspace');
    // A workspace-scoped neuron is changed only by a workspace admin.
    expect((await app.put(`/v1/neurons/${mine.id}`, member, { description: 'no' })).status).toBe(403);
    expect((await app.del(`/v1/neurons/${mine.id}`, member)).status).toBe(403);
    expect((await app.post('/v1/neurons', core, { name: 'c2', scope: 'core' }, ws.brainHeaders)).status).toBe(201);
  });

  it("a core neuron's system_prompt is redacted for callers without core_admin", async () => {
    const ws = await buildWorkspace(app);
    const core = await ws.jwt(['core_admin']);
    const n = await createNeuron(
      ws,
      { name: 'curated', scope: 'core', neuron_config: { system_prompt: 'secret charter', model: 'local/echo' } },
      core,
    );
    expect(n).toMatchObject({ redacted: false, neuron_config: { system_prompt: 'secret charter' } });
    const seen = Neuron.parse((await app.get(`/v1/neurons/${n.id}`, ws.key)).body);
    expect(seen).toMatchObject({ redacted: true, neuron_config: { system_prompt: '[redacted]', model: 'local/echo' } });
    expect(
      NeuronVersion.parse((await app.get(`/v1/neurons/${n.id}/versions/1`, ws.key)).body).snapshot.neuron_config
        .system_prompt,
    ).toBe('[redacted]');
    expect(
      Neuron.parse((await app.get(`/v1/resources/neurons/${n.id}`, ws.key)).body).neuron_config.system_prompt,
    ).toBe('[redacted]');
    const listed = NeuronList.parse((await app.get('/v1/neurons', ws.key, ws.brainHeaders)).body);
    expect(listed.neurons[0].neuron_config.system_prompt).toBe('[redacted]');
    expect(Neuron.parse((await app.get(`/v1/neurons/${n.id}`, core)).body).neuron_config.system_prompt).toBe(
      'secret charter',
    );
    // Only core admins change core neurons; the run engine reads the real prompt.
    expect((await app.put(`/v1/neurons/${n.id}`, ws.key, { description: 'x' })).status).toBe(403);
    const doc = await app.services.neurons.resolve(systemScope(ws.workspaceId), n.id);
    expect(app.services.neurons.headSnapshot(doc).neuron_config.system_prompt).toBe('secret charter');
  });
});

describe('neurons: receptor, delete, catalog', () => {
  it('creating a neuron auto-creates its receptor; scope and is_active follow; the slug gets -2 on collision', async () => {
    const ws = await buildWorkspace(app);
    const scope = systemScope(ws.workspaceId);
    const n = await createNeuron(ws, { name: 'Greeter' });
    const r = await app.services.receptors.forTarget(scope, 'neuron', n.id);
    expect(r).toMatchObject({
      slug: 'greeter',
      brainId: ws.brainId,
      activeChannels: ['http'],
      isActive: true,
      scope: 'brain',
      executableTarget: { kind: 'neuron', id: n.id },
    });
    expect(r?.sensoryReflexId ?? null).toBeNull();
    await app.put(`/v1/neurons/${n.id}`, ws.key, { is_active: false, scope: 'workspace' });
    expect(await app.services.receptors.forTarget(scope, 'neuron', n.id)).toMatchObject({
      isActive: false,
      scope: 'workspace',
    });
    await app.put(`/v1/neurons/${n.id}`, ws.key, { is_active: true });
    expect(await app.services.receptors.forTarget(scope, 'neuron', n.id)).toMatchObject({
      isActive: true,
      scope: 'workspace',
    });
    const b2 = await secondBrain(ws);
    const twin = Neuron.parse((await app.post('/v1/neurons', ws.key, { name: 'greeter', brain_id: b2 })).body);
    expect((await app.services.receptors.forTarget(scope, 'neuron', twin.id))?.slug).toBe('greeter-2');
    // Another workspace's receptors do not collide.
    const other = await buildWorkspace(app);
    const theirs = await createNeuron(other, { name: 'greeter' });
    expect((await app.services.receptors.forTarget(systemScope(other.workspaceId), 'neuron', theirs.id))?.slug).toBe(
      'greeter',
    );
    expect(await app.services.receptors.forTarget(scope, 'neuron', theirs.id)).toBeNull();
  });

  it('DELETE /v1/neurons/:id removes the neuron, its versions and its receptor', async () => {
    const ws = await buildWorkspace(app);
    const scope = systemScope(ws.workspaceId);
    const n = await createNeuron(ws, { name: 'doomed' });
    await app.put(`/v1/neurons/${n.id}`, ws.key, { description: 'v2' });
    const res = await app.del(`/v1/neurons/doomed`, ws.key, ws.brainHeaders);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect((await app.get(`/v1/neurons/${n.id}`, ws.key)).status).toBe(404);
    expect((await app.get(`/v1/resources/neurons/${n.id}`, ws.key)).status).toBe(404);
    expect(await app.services.receptors.forTarget(scope, 'neuron', n.id)).toBeNull();
    expect(await app.deps.db.collection('neuron_versions').countDocuments({ neuronId: n.id })).toBe(0);
    expect((await app.del(`/v1/neurons/${n.id}`, ws.key)).status).toBe(404);
  });

  it('catalog soft delete hides the neuron until restore, which records a version', async () => {
    const ws = await buildWorkspace(app);
    const scope = systemScope(ws.workspaceId);
    const n = await createNeuron(ws, { name: 'sleepy' });
    const del = await app.del(`/v1/resources/neurons/${n.id}`, ws.key);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await app.get(`/v1/neurons/${n.id}`, ws.key)).status).toBe(404);
    expect((await app.get('/v1/neurons/sleepy', ws.key, ws.brainHeaders)).status).toBe(404);
    expect(NeuronList.parse((await app.get('/v1/neurons', ws.key, ws.brainHeaders)).body).total).toBe(0);
    expect(NeuronList.parse((await app.get('/v1/resources/neurons', ws.key)).body).total).toBe(0);
    const withDeleted = NeuronList.parse((await app.get('/v1/resources/neurons?include_deleted=true', ws.key)).body);
    expect(withDeleted.neurons.map((x) => x.id)).toEqual([n.id]);
    expect(withDeleted.neurons[0].deleted_at).not.toBeNull();
    expect(Neuron.parse((await app.get(`/v1/resources/neurons/${n.id}`, ws.key)).body).deleted_at).not.toBeNull();
    await expect(app.services.neurons.resolve(scope, n.id)).rejects.toMatchObject({ status: 404 });
    expect((await app.services.receptors.forTarget(scope, 'neuron', n.id))?.isActive).toBe(false);
    expect((await app.post(`/v1/resources/${n.id}/versions/1/promote`, ws.key)).status).toBe(404);
    expect((await app.del(`/v1/resources/neurons/${n.id}`, ws.key)).status).toBe(200);

    const restored = await app.post(`/v1/resources/neurons/${n.id}/restore`, ws.key);
    expect(restored.status).toBe(200);
    expect(Neuron.parse(restored.body)).toMatchObject({ deleted_at: null, version: 2, latest_version: 2 });
    expect((await app.get(`/v1/neurons/${n.id}`, ws.key)).status).toBe(200);
    expect((await app.services.receptors.forTarget(scope, 'neuron', n.id))?.isActive).toBe(true);
    const history = NeuronVersionList.parse((await app.get(`/v1/resources/neurons/${n.id}/history`, ws.key)).body);
    expect(history.versions.map((v) => [v.version, v.note])).toEqual([
      [2, 'restored'],
      [1, 'created'],
    ]);
    const again = await app.post(`/v1/resources/neurons/${n.id}/restore`, ws.key);
    expect(Neuron.parse(again.body).latest_version).toBe(2);
  });

  it('catalog reads, version and promote address a neuron by UUID only', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, { name: 'cat', description: 'one' });
    await app.put(`/v1/neurons/${n.id}`, ws.key, { description: 'two' });
    const list = NeuronList.parse((await app.get('/v1/resources/neurons?search=cat', ws.key)).body);
    expect(list.neurons.map((x) => x.id)).toEqual([n.id]);
    expect(Neuron.parse((await app.get(`/v1/resources/neurons/${n.id}`, ws.key)).body).description).toBe('two');
    expect((await app.get('/v1/resources/neurons/cat', ws.key)).status).toBe(400);
    const v1 = NeuronVersion.parse((await app.get(`/v1/resources/neurons/${n.id}/versions/1`, ws.key)).body);
    expect(v1.snapshot.description).toBe('one');
    expect((await app.get(`/v1/resources/neurons/${n.id}/versions/0`, ws.key)).status).toBe(400);
    expect((await app.get(`/v1/resources/neurons/${n.id}/versions/5`, ws.key)).status).toBe(404);
    const promoted = await app.post(`/v1/resources/${n.id}/versions/1/promote`, ws.key);
    expect(promoted.status).toBe(200);
    expect(Neuron.parse(promoted.body)).toMatchObject({ version: 3, description: 'one' });
    expect((await app.post(`/v1/resources/${randomUUID()}/versions/1/promote`, ws.key)).status).toBe(404);
  });
});

describe('neurons: tenancy and auth', () => {
  it("another workspace's neuron is 404 on every route", async () => {
    const a = await buildWorkspace(app);
    const b = await buildWorkspace(app);
    const n = await createNeuron(a, { name: 'private' });
    const checks: [string, string, unknown?][] = [
      ['GET', `/v1/neurons/${n.id}`],
      ['GET', '/v1/neurons/private'],
      ['PUT', `/v1/neurons/${n.id}`, { description: 'x' }],
      ['DELETE', `/v1/neurons/${n.id}`],
      ['GET', `/v1/neurons/${n.id}/versions`],
      ['GET', `/v1/neurons/${n.id}/versions/1`],
      ['POST', `/v1/neurons/${n.id}/versions/1/promote`],
      ['GET', `/v1/resources/neurons/${n.id}`],
      ['GET', `/v1/resources/neurons/${n.id}/history`],
      ['GET', `/v1/resources/neurons/${n.id}/versions/1`],
      ['POST', `/v1/resources/${n.id}/versions/1/promote`],
      ['DELETE', `/v1/resources/neurons/${n.id}`],
      ['POST', `/v1/resources/neurons/${n.id}/restore`],
    ];
    for (const [method, path, body] of checks) {
      const r = await app.request(method, path, { auth: b.key, body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body).toMatchObject({ code: 'NOT_FOUND' });
    }
    expect((await app.get(`/v1/neurons/${n.id}`, b.key, { 'x-brain-id': a.brainId })).status).toBe(404);
    expect(NeuronList.parse((await app.get('/v1/neurons', b.key, b.brainHeaders)).body).total).toBe(0);
    expect(NeuronList.parse((await app.get('/v1/resources/neurons', b.key)).body).total).toBe(0);
    expect((await app.get(`/v1/neurons/${n.id}`, a.key)).status).toBe(200);
  });

  it('401 without a valid credential on every route', async () => {
    const id = randomUUID();
    const routes: [string, string][] = [
      ['GET', '/v1/neurons'],
      ['GET', `/v1/neurons/${id}`],
      ['POST', '/v1/neurons'],
      ['PUT', `/v1/neurons/${id}`],
      ['DELETE', `/v1/neurons/${id}`],
      ['GET', `/v1/neurons/${id}/versions`],
      ['GET', `/v1/neurons/${id}/versions/1`],
      ['POST', `/v1/neurons/${id}/versions/1/promote`],
      ['GET', '/v1/resources/neurons'],
      ['GET', `/v1/resources/neurons/${id}`],
      ['GET', `/v1/resources/neurons/${id}/history`],
      ['GET', `/v1/resources/neurons/${id}/versions/1`],
      ['POST', `/v1/resources/${id}/versions/1/promote`],
      ['DELETE', `/v1/resources/neurons/${id}`],
      ['POST', `/v1/resources/neurons/${id}/restore`],
    ];
    for (const [method, path] of routes) {
      const r = await app.request(method, path, {
        body: method === 'POST' || method === 'PUT' ? { name: 'x' } : undefined,
      });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.body).toMatchObject({ code: 'AUTH_REQUIRED' });
    }
    expect((await app.get('/v1/neurons', 'ctx_wrong')).status).toBe(401);
  });
});
