import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import type { RouteDef } from '../../api/route.js';
import { buildWorkspace, type TestApp, type TestResponse } from './app.js';

/**
 * The route table's fixture world (test/security/): workspaces A and B, A's resources of every
 * kind a mounted route names, pathway participants and share links, and for each route the path
 * parameters, query and body that reach its handler. The generated security suites walk
 * `allRoutes()` with it; a mounted route it cannot fill fails test/security/authorization.test.ts.
 */
export type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
export interface RouteWorld {
  a: Ws;
  b: Ws;
  ids: Record<string, string>;
  /** Pathway participants of workspace A: their JWTs and API keys. */
  viewer: { jwt: string; key: string };
  editor: { jwt: string; key: string };
  member: { jwt: string; key: string };
}

/** A body fixture is missing for the route (the authorization suite fails on it). */
export const MISSING = Symbol('no body fixture');

/** Registers the world's set-up (beforeAll) and clean-up (afterAll) for one test file; its fillers read it. */
export function useRouteWorld(app: TestApp) {
  let w: RouteWorld;
  async function ok<T = Record<string, unknown>>(p: Promise<TestResponse<T>>, status = [200, 201]): Promise<T> {
    const r = await p;
    if (!status.includes(r.status)) throw new Error(`fixture call answered ${r.status}: ${r.text}`);
    return r.body;
  }

  /** A member user of workspace A with a JWT and their own API key (the key acts for them). */
  async function user(ws: Ws, roles: string[] = []) {
    const sub = randomUUID();
    const jwt = await ws.jwt(roles, sub);
    const key = (await ok(app.post<{ key: string }>('/v1/api-keys', jwt, { name: `key of ${sub.slice(0, 8)}` }))).key;
    return { sub, jwt, key };
  }

  beforeAll(async () => {
    const a = await buildWorkspace(app);
    const b = await buildWorkspace(app);
    const admin = await a.jwt(['workspace_admin']);
    const h = a.brainHeaders;
    const neuron = await ok(app.post('/v1/neurons', a.key, { name: 'authz-neuron', brain_id: a.brainId }));
    const reflex = await ok(
      app.post(
        '/v1/reflexes',
        a.key,
        { name: 'authz-reflex', type: 'effector', scope: 'brain', metadata: { handler: 'calculator' } },
        h,
      ),
    );
    await ok(app.post(`/v1/neurons/${String(neuron.id)}/reflexes`, a.key, { reflex_id: reflex.id }));
    const traceId = randomUUID();
    await ok(app.post(`/v1/traces/${traceId}/messages`, a.key, { content: 'hello' }));
    const pathway = await ok(app.post('/v1/pathways', a.key, { name: 'authz-pathway' }, h));
    const viewer = await user(a);
    const editor = await user(a);
    const member = await user(a);
    const vp = await ok(
      app.post(`/v1/pathways/${String(pathway.id)}/participants`, a.key, { user_id: viewer.sub, role: 'viewer' }, h),
    );
    await ok(
      app.post(`/v1/pathways/${String(pathway.id)}/participants`, a.key, { user_id: editor.sub, role: 'editor' }, h),
    );
    const inv = await ok(
      app.post(`/v1/neurons/${String(neuron.id)}/invoke`, a.key, { message: 'x', trace_id: traceId }),
      [202],
    );
    const scope = await app.services.auth.authenticate(a.key);
    const intervention = await app.services.interventions.create(scope, {
      id: randomUUID(),
      jobId: String(inv.job_id),
      traceId,
      pathwayId: String(pathway.id),
      brainId: a.brainId,
      nodeIndex: 0,
      kind: 'approval',
      title: 'ok?',
      prompt: '',
      options: ['approve', 'reject'],
    });
    const adminKey = (await ok(app.get<{ api_keys: { id: string }[] }>('/v1/api-keys', admin))).api_keys[0].id;
    const receptor = (
      await ok(
        app.get<{ receptors: { id: string; executable_target: { id: string } }[] }>(
          '/v1/receptors?limit=200',
          a.key,
          h,
        ),
      )
    ).receptors.find((r) => r.executable_target.id === String(neuron.id))!;
    const scheduled = await ok(
      app.post('/v1/receptors/subscribe', a.key, {
        template: 'schedule',
        name: 'authz-schedule',
        brain_id: a.brainId,
        target: { kind: 'neuron', id: String(neuron.id) },
        timing: { interval: 86400 },
      }),
    );
    const binding = await ok(
      app.patch(`/v1/receptors/${a.workspaceId}/${receptor.id}`, a.key, { active_channels: ['http', 'slack'] }),
    ).then(() =>
      ok(
        app.post('/v1/receptor-channel-bindings', admin, {
          receptor_id: receptor.id,
          channel: 'slack',
          external_id: `authz-${randomUUID()}`,
        }),
      ),
    );
    // Share links: A (this neuron's receptor) with a trace and a job of its own, and B (another neuron's) to try A's resources with.
    const shareA = String(
      (await ok(app.post(`/v1/receptors/${a.workspaceId}/${receptor.id}/share`, a.key, { allow_files: true }))).token,
    );
    const other = await ok(app.post('/v1/neurons', a.key, { name: 'authz-other', brain_id: a.brainId }));
    const receptorB = (
      await ok(
        app.get<{ receptors: { id: string; executable_target: { id: string } }[] }>(
          '/v1/receptors?limit=200',
          a.key,
          h,
        ),
      )
    ).receptors.find((r) => r.executable_target.id === String(other.id))!;
    const shareB = String(
      (await ok(app.post(`/v1/receptors/${a.workspaceId}/${receptorB.id}/share`, a.key, {}))).token,
    );
    const shareTrace = randomUUID();
    await app.services.traces.append({ ...scope, receptorId: receptor.id }, shareTrace, {
      content: { type: 'human', content: 'hi' },
      sourceType: 'user',
      sourceId: null,
      trace: { brainId: a.brainId, receptorId: receptor.id },
    });
    const shareJob = String(
      (
        await ok(
          app.post(`/v1/public/receptors/by-id/${receptor.id}/execute?t=${shareA}`, undefined, { message: 'hi' }),
          [202],
        )
      ).job_id,
    );
    w = {
      a,
      b,
      viewer,
      editor,
      member,
      ids: {
        neuron: String(neuron.id),
        reflex: String(reflex.id),
        trace: traceId,
        pathway: String(pathway.id),
        participant: String((vp.participant as { id: string }).id),
        participantUser: viewer.sub,
        job: String(inv.job_id),
        intervention: intervention._id,
        apiKey: adminKey,
        workspace: a.workspaceId,
        receptor: receptor.id,
        schedule: String(scheduled.id),
        binding: String(binding.id),
        shareA,
        shareB,
        receptorB: receptorB.id,
        shareTrace,
        shareJob,
        skill: String(
          (
            await ok(
              app.post('/v1/skills', a.key, { body_md: '# fixture', path_name: 'authz fixture', brain_id: a.brainId }),
            )
          ).id,
        ),
        budget: String(
          (
            await ok(
              app.post('/v1/budgets', a.key, {
                scope: 'neuron',
                target_id: String(neuron.id),
                measure: 'tokens',
                period: 'day',
                limit: 1_000_000,
              }),
            )
          ).id,
        ),
        ...(await knowledgeFixtures(a)),
        ...(await stakeholderMapFixtures(a)),
        ...(await webhookFixtures(admin, a)),
        ...(await evaluationFixtures(a, String(neuron.id))),
      },
    };
  }, 120_000);

  /** Workspace A's knowledge: an asset and an artifact with one chunk each (written directly: this file runs no worker), a memory, a recollection. */
  async function knowledgeFixtures(a: Ws) {
    const h = a.brainHeaders;
    const asset = String(
      ((await ok(app.post('/v1/assets', a.key, { name: 'authz asset' }, h))).asset as { id: string }).id,
    );
    const artifact = String(
      (
        (await ok(app.post('/v1/artifacts', a.key, { title: 'authz artifact', content: 'x' }, h))).artifact as {
          id: string;
        }
      ).id,
    );
    const memory = String(
      (
        (await ok(app.post('/v1/memories', a.key, { name: 'authz memory', source_type: 'text' }, h))).memory as {
          id: string;
        }
      ).id,
    );
    const recollection = String((await ok(app.post('/v1/recollections', a.key, { name: 'authz recollection' }, h))).id);
    const chunk = (kind: 'asset' | 'artifact', id: string) => ({
      _id: `${id}:1:0`,
      workspaceId: a.workspaceId,
      brainId: a.brainId,
      resourceKind: kind,
      resourceId: id,
      version: 1,
      index: 0,
      source: 'body',
      text: 'x',
      tokens: 1,
      path: '',
      embedding: null,
      createdAt: new Date(),
    });
    await app.deps.db.collection('chunks').insertMany([chunk('asset', asset), chunk('artifact', artifact)] as never[]);
    // Meetings (docs/meetings.md): a meeting with a live session (its job stays queued: this file runs no worker).
    const meeting = String((await ok(app.post('/v1/meetings', a.key, { title: 'authz meeting' }, h))).id);
    const live = await ok(app.post(`/v1/meetings/${meeting}/transcription/live/start`, a.key, {}, h));
    return {
      asset,
      artifact,
      memory,
      recollection,
      assetChunk: `${asset}:1:0`,
      artifactChunk: `${artifact}:1:0`,
      meeting,
      session: String(live.session_id),
      sessionJob: String(live.job_id),
    };
  }

  /** Workspace A's default stakeholder map with one stakeholder and saved version 1. */
  async function stakeholderMapFixtures(a: Ws) {
    const map = String((await ok(app.get('/v1/stakeholder-map', a.key, a.brainHeaders))).resource_id);
    const r = await ok(
      app.post<{ changes: { added: { stakeholders: string[] } }; version: { id: string } }>(
        `/v1/resources/stakeholder_map/${map}/patch`,
        a.key,
        {
          patch_mode: 'stakeholder_map_record_version',
          ops: [{ op: 'upsert_stakeholder', name: 'Authz Person' }],
        },
        a.brainHeaders,
      ),
    );
    return { stakeholderMap: map, stakeholder: r.changes.added.stakeholders[0], stakeholderVersion: r.version.id };
  }

  /** Workspace A's webhook endpoint (disabled: nothing is sent) with one recorded delivery (written directly: no event is needed). */
  async function webhookFixtures(admin: string, a: Ws) {
    const body = { url: 'https://hooks.example.com/authz', events: ['job.completed'], enabled: false };
    const webhookEndpoint = String((await ok(app.post('/v1/webhook-endpoints', admin, body))).id);
    const webhookDelivery = randomUUID();
    const now = new Date();
    await app.deps.repos.webhooks.createDelivery({
      _id: webhookDelivery,
      workspaceId: a.workspaceId,
      endpointId: webhookEndpoint,
      event: 'job.completed',
      eventKey: `job.completed:${randomUUID()}:completed`,
      body: '{"type":"job.completed","timestamp":"2026-01-01T00:00:00.000Z","data":{}}',
      status: 'delivered',
      replayOf: null,
      attempts: [],
      failedReason: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: now,
    });
    return { webhookEndpoint, webhookDelivery };
  }

  /** Workspace A's dataset (one item) and two experiments on it (written directly: no workflow is started). */
  async function evaluationFixtures(a: Ws, neuronId: string) {
    const ds = await ok(
      app.post<{ id: string }>(
        '/v1/datasets',
        a.key,
        { name: 'authz', items: [{ input: 'q', expected: 'a' }] },
        a.brainHeaders,
      ),
    );
    const items = await ok(app.get<{ items: { id: string }[] }>(`/v1/datasets/${ds.id}/items`, a.key, a.brainHeaders));
    const experiment = async () => {
      const id = randomUUID();
      const now = new Date();
      await app.deps.repos.evaluations.createExperiment({
        _id: id,
        workspaceId: a.workspaceId,
        brainId: a.brainId,
        name: 'authz',
        datasetId: ds.id,
        datasetVersion: 1,
        target: { kind: 'neuron', id: neuronId, version: 1 },
        evaluators: [{ type: 'exact', name: 'exact', passThreshold: 1, caseSensitive: true }],
        concurrency: 1,
        status: 'running',
        itemCount: 1,
        currentStep: null,
        failedReason: null,
        aggregates: null,
        scope: { workspaceId: a.workspaceId, userId: null, apiKeyId: null, roles: [], credential: 'system' },
        createdBy: null,
        createdAt: now,
        updatedAt: now,
        finishedAt: null,
      });
      return id;
    };
    return {
      dataset: ds.id,
      datasetItem: items.items[0].id,
      experiment: await experiment(),
      experiment2: await experiment(),
    };
  }

  // The subscribed schedule lives in the shared Temporal server: it must not outlive this file.
  afterAll(async () => {
    if (w?.ids.schedule) await app.services.schedules.remove(w.ids.schedule);
  });
  /** Fills a route's path parameters with workspace A's resources; undefined when no fixture fits (the suite then fails). */
  function fill(path: string): string | undefined {
    const family = path.split('/')[2];
    const byParam: Record<string, string | undefined> = {
      id: {
        neurons: w.ids.neuron,
        reflexes: w.ids.reflex,
        traces: w.ids.trace,
        pathways: w.ids.pathway,
        interventions: w.ids.intervention,
        'api-keys': w.ids.apiKey,
        receptors: w.ids.receptor,
        resources: w.ids.receptor,
        'receptor-channel-bindings': w.ids.binding,
        public: w.ids.shareTrace,
        skills: w.ids.skill,
        assets: w.ids.asset,
        artifacts: w.ids.artifact,
        memories: w.ids.memory,
        recollections: w.ids.recollection,
        meetings: w.ids.meeting,
        budgets: w.ids.budget,
        'webhook-endpoints': w.ids.webhookEndpoint,
        datasets: w.ids.dataset,
        experiments: w.ids.experiment,
        stakeholders: w.ids.stakeholder,
        'stakeholder-map': path.includes('/versions/') ? w.ids.stakeholderVersion : w.ids.stakeholder,
        // Operator routes: a deletion id that names none (the operator token is the only credential).
        operator: '00000000-0000-4000-8000-000000000000',
      }[family],
      workspaceId: w.ids.workspace,
      session_id: w.ids.session,
      delivery_id: w.ids.webhookDelivery,
      item_id: w.ids.datasetItem,
      artifact_id: w.ids.artifact,
      resourceId: w.ids.stakeholderMap,
      chunk_id: family === 'assets' ? w.ids.assetChunk : w.ids.artifactChunk,
      // /v1/resources/:catalog/:resource_id reads the asset; /v1/resources/:kind/:resource_id/patch patches the artifact.
      catalog: 'assets',
      kind: 'artifact',
      workspace: w.ids.workspace,
      receptor_id: w.ids.receptor,
      job_id: w.ids.shareJob,
      integration_id: 'authz-integration',
      name: 'AUTHZ_SECRET',
      workspace_slug: w.ids.workspace,
      slug: w.ids.receptor,
      slug_or_id: path.includes('/schedule/') ? w.ids.schedule : w.ids.receptor,
      resource_id: path.includes(':catalog') ? w.ids.asset : path.includes(':kind') ? w.ids.artifact : w.ids.neuron,
      version: '1',
      reflexId: w.ids.reflex,
      jobId: w.ids.job,
      participantId: w.ids.participant,
      userId: w.ids.participantUser,
      workspace_id: w.ids.workspace,
      // The public routes (auth none): a chat channel, and a token that names no intervention.
      provider: 'slack',
      token: `unknown-token-${w.ids.workspace}`,
    };
    let missing = false;
    const out = path.replace(/:(\w+)/g, (_, name: string) => {
      const v = byParam[name];
      if (v === undefined) missing = true;
      return v ?? '';
    });
    return missing ? undefined : out;
  }

  /** A valid body for each route that takes one (validation runs before the lookup that answers 404). */
  function bodyFor(def: RouteDef): unknown {
    if (!def.body) return undefined;
    const bodies: Record<string, unknown> = {
      'POST /v1/api-keys': { name: 'k' },
      'PATCH /v1/api-keys/:id': { rate_limit: null },
      'PATCH /v1/workspace': { name: 'Renamed' },
      'PATCH /v1/workspace/retention': { interventions: 0 },
      'POST /v1/brains': { name: 'b' },
      'PATCH /v1/traces/:id': { title: 't' },
      'POST /v1/traces/:id/messages': { content: 'c' },
      'POST /v1/traces/:id/fork': { at_engram_id: randomUUID() },
      'POST /v1/neurons': { name: 'n2', brain_id: w.a.brainId },
      'PUT /v1/neurons/:id': { description: 'd' },
      'POST /v1/reflexes': {
        name: 'r2',
        type: 'effector',
        scope: 'brain',
        brain_id: w.a.brainId,
        metadata: { handler: 'calculator' },
      },
      'PUT /v1/reflexes/:id': { description: 'd' },
      'POST /v1/neurons/:id/reflexes': { reflex_id: w.ids.reflex },
      'POST /v1/neurons/:id/invoke': { message: 'm' },
      'POST /v1/openai/chat/completions': { model: 'authz-neuron', messages: [{ role: 'user', content: 'm' }] },
      'POST /v1/interventions/:id/respond': { action: 'approve' },
      'POST /v1/pathways/validate': { nodes: [], edges: [] },
      'POST /v1/pathways/compile': { pathway: { nodes: [], edges: [] } },
      'PUT /v1/pathways/participants/:participantId': { role: 'editor' },
      'POST /v1/pathways': { name: 'p2' },
      'PUT /v1/pathways/:id': { description: 'changed' },
      'POST /v1/pathways/:id/versions/:version/promote': {},
      'POST /v1/pathways/:id/participants': { user_id: randomUUID(), role: 'viewer' },
      'POST /v1/pathways/:id/execute': {},
      'POST /v1/jobs': { pathway_id: w.ids.pathway },
      'POST /v1/jobs/:jobId/input': {
        input: { type: 'intervention_response', interventionId: w.ids.intervention, action: 'approve' },
      },
      'POST /v1/jobs/:jobId/resume': { action: 'approve' },
      'POST /v1/jobs/:jobId/replay': { from_node: 'start' },
      'POST /v1/receptors/subscribe': {
        template: 'stimulus',
        name: 's',
        brain_id: w.a.brainId,
        target: { kind: 'neuron', id: w.ids.neuron },
        stimulus_keys: ['vault.asset.created'],
      },
      'POST /v1/receptors/:id/fire': { message: 'm' },
      'PATCH /v1/receptors/:workspace_slug/:slug_or_id': { config: { a: 1 } },
      'POST /v1/receptors/:workspace_slug/:slug_or_id/schedule/pause': { note: 'n' },
      'POST /v1/receptors/:workspace_slug/:slug_or_id/schedule/unpause': {},
      'POST /v1/receptors/:workspace_slug/:slug_or_id/schedule/trigger': {},
      'POST /v1/receptors/:workspace_slug/:slug_or_id/schedule/backfill': {
        start_at: '2020-01-01T00:00:00Z',
        end_at: '2020-01-02T00:00:00Z',
      },
      'POST /v1/schedules/preview': { timing: { interval: 3600 }, count: 2 },
      'POST /v1/receptor-channel-bindings': {
        receptor_id: w.ids.receptor,
        channel: 'slack',
        external_id: `authz-${randomUUID()}`,
      },
      'PATCH /v1/receptor-channel-bindings/:id': { metadata: { a: 1 } },
      'PATCH /v1/receptor-channel-bindings': { id: w.ids.binding, metadata: { a: 1 } },
      'POST /v1/receptors/:workspace_slug/:slug_or_id/share': {},
      'POST /v1/receptors/:workspace_slug/:slug_or_id/share/rotate': {},
      'POST /v1/public/receptors/by-id/:receptor_id/execute': { message: 'm' },
      'POST /v1/public/receptors/:workspace/:slug/execute': { message: 'm' },
      'PUT /v1/secrets/:name': { value: 's3cret' },
      'PUT /v1/integrations/:integration_id': {
        authorization_endpoint: 'https://id.example/auth',
        token_endpoint: 'https://id.example/token',
        client_id: 'c',
      },
      'POST /v1/reflexes/:id/connect': {},
      'POST /v1/reflexes/:id/connections/initiate': {},
      'POST /v1/reflexes/connections/batch': { reflexIds: [w.ids.reflex] },
      'POST /v1/reflexes/connections/check-batch': {},
      'POST /v1/skills': { body_md: '# s', path_name: 'authz skill', brain_id: w.a.brainId },
      'PUT /v1/skills/:id': { body_md: '# changed' },
      'POST /v1/assets': { name: 'a2' },
      'POST /v1/assets/structure-batch': { paths: ['x'] },
      'PUT /v1/assets/:id': { name: 'renamed' },
      'POST /v1/artifacts': { title: 't2', content: 'c' },
      'POST /v1/artifacts/patch': { artifact_id: w.ids.artifact, base_version: 1, title: 'patched' },
      'PUT /v1/artifacts/:id': { title: 'renamed' },
      'POST /v1/resources/:kind/:resource_id/patch': { base_version: 1, title: 'patched' },
      'POST /v1/resources/tree': {},
      'POST /v1/resources/move': { moves: [{ resource_id: w.ids.asset, path: 'moved' }] },
      'POST /v1/memories': { name: 'm2', source_type: 'text' },
      'POST /v1/memories/bulk-delete': { ids: [w.ids.memory] },
      'POST /v1/recollections': { name: 'r2' },
      'PUT /v1/recollections/:id': { name: 'renamed' },
      'POST /v1/grep': { query: 'neurons' },
      'POST /v1/search': { query: 'authz' },
      'POST /v1/browse': { type: 'neurons' },
      'POST /v1/browse/resource-tree': { brain_id: w.a.brainId },
      'POST /v1/recollections/search': { query: 'x', owner_type: 'trace', owner_ids: [w.ids.trace] },
      'POST /v1/meetings': { title: 'm2' },
      'POST /v1/meetings/:id/transcription/live/start': {},
      'POST /v1/meetings/:id/transcription/chunk': { job_id: w.ids.sessionJob, seq: 0, chunk_base64: 'AAAA' },
      'POST /v1/meetings/:id/transcription/live/stop': {},
      'POST /v1/voice/stt-vocabulary/prewarm': { workspace_id: w.a.workspaceId },
      'POST /v1/transcribe': { source: { type: 'asset_id', id: w.ids.asset }, locale: 'en-US', diarize: false },
      'POST /v1/resources/stakeholder_maps': { name: 'authz map 2' },
      'POST /v1/resources/stakeholder_map/:resourceId/patch': { ops: [{ op: 'set_summary', summary: 'patched' }] },
      'POST /v1/stakeholder-map/versions': { label: 'v' },
      'POST /v1/stakeholder-map/extract': { text: 'a transcript' },
      'POST /v1/budgets': { scope: 'workspace', measure: 'usd', period: 'month', limit: 100 },
      'PATCH /v1/budgets/:id': { limit: 2_000_000 },
      'POST /v1/webhook-endpoints': { url: 'https://hooks.example.com/x', events: ['job.failed'] },
      'PATCH /v1/webhook-endpoints/:id': { description: 'changed' },
      'POST /v1/datasets': { name: 'authz 2' },
      'PATCH /v1/datasets/:id': { description: 'changed' },
      'POST /v1/datasets/:id/items': { input: 'q2' },
      'POST /v1/datasets/:id/import': { format: 'jsonl', content: '{"input":"q3"}' },
      'POST /v1/datasets/:id/items/from-job': { job_id: w.ids.job },
      'POST /v1/experiments': {
        dataset_id: w.ids.dataset,
        target: { neuron_id: w.ids.neuron },
        evaluators: [{ type: 'exact' }],
      },
      'POST /v1/public/interventions/:token/respond': { action: 'approve' },
      'POST /v1/chat-webhooks/:provider': {
        external_id: `authz-${randomUUID()}`,
        event_id: randomUUID(),
        message: 'm',
      },
      'POST /v1/internal/stimuli': {
        workspace_id: w.a.workspaceId,
        key: 'vault.asset.created',
        event_id: randomUUID(),
        payload: { a: 1 },
      },
    };
    return bodies[`${def.method.toUpperCase()} ${def.path}`] ?? MISSING;
  }
  /** Required query parameters of the routes that have some. */
  function queryFor(def: RouteDef): string {
    const queries: Record<string, string> = {
      'GET /v1/pathways/:id/participants/check-role': `?user_id=${w.ids.participantUser}&role=viewer`,
      'DELETE /v1/receptor-channel-bindings': `?id=${w.ids.binding}`,
      'DELETE /v1/assets/:id/chunks/by-source': '?source=body',
      'GET /v1/search': '?q=authz',
      'GET /v1/browse': '?type=neurons',
      'GET /v1/experiments/compare': `?ids=${w.ids.experiment},${w.ids.experiment2}`,
    };
    return queries[`${def.method.toUpperCase()} ${def.path}`] ?? '';
  }
  return {
    get w(): RouteWorld {
      return w;
    },
    fill,
    bodyFor,
    queryFor,
  };
}
