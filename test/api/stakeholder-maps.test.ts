import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  Briefing,
  Diff,
  ExtractAccepted,
  LiveMap,
  MapHead,
  MapList,
  MapRead,
  PatchResult,
  VersionList,
  VersionMeta,
  VersionRead,
} from '../../src/stakeholders/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';
import { lastUserText, type ScriptedRequestBody } from '../support/scripted-openai.js';
import { dataOf, readSse } from '../support/sse.js';

/**
 * Stakeholder maps (docs/stakeholder-maps.md) against the real app, worker, FerretDB, Redis and
 * Temporal, with the model answering over real HTTP from the scripted OpenAI-compatible server.
 */
// The meeting hook extracts with DEFAULT_MODEL: here the scripted OpenAI-compatible server.
const { app, llm } = usePlatform({ DEFAULT_MODEL: 'openai/gpt-4o-mini' });
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const patch = (ws: Ws, id: string, body: unknown) =>
  app.post(`/v1/resources/stakeholder_map/${id}/patch`, ws.key, body, ws.brainHeaders);
async function defaultMap(ws: Ws) {
  const res = await app.get('/v1/stakeholder-map', ws.key, ws.brainHeaders);
  expect(res.status).toBe(200);
  return LiveMap.parse(res.body);
}
const idOf = (g: { stakeholders: { id: string; name: string }[] }, name: string) =>
  g.stakeholders.find((s) => s.name === name)!.id;

describe('the stakeholder map flow', () => {
  it('patch in stakeholders and interactions, save a version, change the live graph, diff live against the version, read a briefing', async () => {
    const ws = await buildWorkspace(app);
    const empty = await defaultMap(ws);
    expect(empty).toMatchObject({
      revision: 0,
      latest_version: 0,
      stakeholders: [],
      counts: { stakeholders: 0 },
    });
    const mapId = empty.resource_id;
    // A second read is the same map (the default map is made once).
    expect((await defaultMap(ws)).resource_id).toBe(mapId);

    const p1 = await patch(ws, mapId, {
      ops: [
        {
          op: 'upsert_stakeholder',
          name: 'Dana Lee',
          role: 'CFO',
          organization: 'Acme',
          influence: 'high',
          stance: 'neutral',
        },
        { op: 'upsert_stakeholder', name: 'Ari Chen', role: 'CTO', influence: 'high', stance: 'supportive' },
        {
          op: 'add_interaction',
          summary: 'Kickoff: budget agreed in principle',
          participants: ['Dana Lee', 'Ari Chen'],
          sentiment: 'positive',
          occurred_at: '2025-01-05T10:00:00Z',
          topics: ['budget'],
        },
        {
          op: 'set_edge',
          from: 'Dana Lee',
          to: 'Ari Chen',
          polarity: 'positive',
          relation: 'steering group',
          strength: 0.8,
        },
      ],
    });
    expect(p1.status, p1.text).toBe(200);
    const r1 = PatchResult.parse(p1.body);
    expect(r1.revision).toBe(1);
    expect(r1.changes.added.stakeholders).toHaveLength(2);
    expect(r1.stakeholder_map).toMatchObject({
      id: mapId,
      is_default: true,
      revision: 1,
      counts: { stakeholders: 2, interactions: 1, edges: 1, risks: 0 },
    });

    const saved = await app.post('/v1/stakeholder-map/versions', ws.key, { label: 'after kickoff' }, ws.brainHeaders);
    expect(saved.status, saved.text).toBe(201);
    const v1 = VersionMeta.parse(saved.body);
    expect(v1).toMatchObject({
      version: 1,
      label: 'after kickoff',
      revision: 1,
      resource_id: mapId,
      counts: { stakeholders: 2 },
    });

    // Change the live graph with the DSL: a new person, a tension, a stance change, a risk, a negative meeting.
    const p2 = await patch(ws, mapId, {
      base_revision: 1,
      dsl: [
        'stakeholder "Dana Lee" stance=opposed',
        'interaction "Dana Lee" "Sam Ortiz" summary="Scope argument over Q3 spend" sentiment=negative at=2025-01-20T09:00:00Z topics="scope,Q3 spend"',
        'tension "Dana Lee" "Sam Ortiz" relation="budget conflict" strength=0.7',
        'risk "Budget freeze" "Dana Lee" severity=high description="Q3 spend on hold"',
      ].join('\n'),
    });
    expect(p2.status, p2.text).toBe(200);
    expect(PatchResult.parse(p2.body).revision).toBe(2);
    // A writer that read revision 1 is refused now.
    const stale = await patch(ws, mapId, { base_revision: 1, ops: [{ op: 'set_summary', summary: 'x' }] });
    expect(stale.status).toBe(409);

    const live = await defaultMap(ws);
    const dana = idOf(live, 'Dana Lee');
    for (const path of [
      `/v1/resources/stakeholder_maps/diff?from=1&to=live`,
      `/v1/resources/stakeholder_maps/diff?from=1&to=live&resource_id=${mapId}`,
    ]) {
      const res = await app.get(path, ws.key, ws.brainHeaders);
      expect(res.status, res.text).toBe(200);
      const d = Diff.parse(res.body);
      expect(d).toMatchObject({ resource_id: mapId, from: 1, to: 'live', from_revision: 1, to_revision: 2 });
      expect(d.stakeholders.added.map((s) => s.name)).toEqual(['Sam Ortiz']);
      expect(d.stakeholders.removed).toEqual([]);
      expect(d.stakeholders.changed).toEqual([
        { id: dana, name: 'Dana Lee', fields: { stance: { from: 'neutral', to: 'opposed' } } },
      ]);
      expect(d.interactions.added.map((i) => i.summary)).toEqual(['Scope argument over Q3 spend']);
      expect(d.edges.added.map((e) => e.polarity)).toEqual(['negative']);
      expect(d.risks.added.map((r) => r.title)).toEqual(['Budget freeze']);
    }
    // The other direction, and version against version.
    const back = Diff.parse(
      (await app.get(`/v1/resources/stakeholder_maps/diff?from=live&to=1`, ws.key, ws.brainHeaders)).body,
    );
    expect(back.stakeholders.removed.map((s) => s.name)).toEqual(['Sam Ortiz']);
    const same = Diff.parse(
      (await app.get(`/v1/resources/stakeholder_maps/diff?from=1&to=1`, ws.key, ws.brainHeaders)).body,
    );
    expect(same.stakeholders).toEqual({ added: [], removed: [], changed: [] });

    // The saved version did not move with the live graph.
    const byId = VersionRead.parse(
      (await app.get(`/v1/stakeholder-map/versions/${v1.id}`, ws.key, ws.brainHeaders)).body,
    );
    const byNumber = VersionRead.parse(
      (await app.get(`/v1/resources/stakeholder_maps/${mapId}/versions/1`, ws.key)).body,
    );
    expect(byId.graph.stakeholders.map((s) => s.name).sort()).toEqual(['Ari Chen', 'Dana Lee']);
    expect(byNumber).toEqual(byId);
    expect(VersionRead.parse((await app.get('/v1/stakeholder-map/versions/1', ws.key, ws.brainHeaders)).body)).toEqual(
      byId,
    );

    for (const path of [`/v1/stakeholders/briefing/${dana}`, `/v1/stakeholder-map/briefing/${dana}`]) {
      const res = await app.get(path, ws.key, ws.brainHeaders);
      expect(res.status, res.text).toBe(200);
      const b = Briefing.parse(res.body);
      expect(b.stakeholder).toMatchObject({ id: dana, name: 'Dana Lee', stance: 'opposed' });
      expect(b.recent_interactions.map((i) => i.summary)).toEqual([
        'Scope argument over Q3 spend',
        'Kickoff: budget agreed in principle',
      ]);
      expect(b.alliances.map((a) => a.stakeholder.name)).toEqual(['Ari Chen']);
      expect(b.tensions.map((t) => [t.stakeholder.name, t.relation])).toEqual([['Sam Ortiz', 'budget conflict']]);
      expect(b.risks.map((r) => r.title)).toEqual(['Budget freeze']);
      const reasons = b.suggested_discussion_points.map((p) => p.reason);
      expect(reasons.slice(0, 4)).toEqual(['risk', 'tension', 'follow_up', 'stance']);
      expect(b.suggested_discussion_points[2].text).toBe('Follow up on scope, Q3 spend (2025-01-20)');
    }

    // Record a version through the patch route (patch_mode stakeholder_map_record_version), with and without changes.
    const rec = PatchResult.parse(
      (await patch(ws, mapId, { patch_mode: 'stakeholder_map_record_version', label: 'after scope fight' })).body,
    );
    expect(rec.version).toMatchObject({ version: 2, label: 'after scope fight', revision: 2 });
    const rec2 = PatchResult.parse(
      (await patch(ws, mapId, { patch_mode: 'stakeholder_map_record_version', dsl: 'remove stakeholder "Sam Ortiz"' }))
        .body,
    );
    expect(rec2).toMatchObject({
      revision: 3,
      version: { version: 3, revision: 3, counts: { stakeholders: 2, edges: 1 } },
    });
    expect(rec2.changes.removed.edges).toHaveLength(1);

    const history = VersionList.parse((await app.get(`/v1/resources/stakeholder_maps/${mapId}/history`, ws.key)).body);
    expect(history.versions.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(history.latest_version).toBe(3);
    const page = VersionList.parse(
      (await app.get('/v1/stakeholder-map/versions?limit=1&offset=1', ws.key, ws.brainHeaders)).body,
    );
    expect(page).toMatchObject({ total: 3, has_more: true });
    expect(page.versions.map((v) => v.version)).toEqual([2]);
    // A removed stakeholder has no briefing.
    const sam = idOf(live, 'Sam Ortiz');
    expect((await app.get(`/v1/stakeholders/briefing/${sam}`, ws.key)).status).toBe(404);

    // Limits on the live read.
    const limited = LiveMap.parse(
      (
        await app.get(
          '/v1/resources/stakeholder_maps/live?stakeholder_limit=1&interaction_limit=1',
          ws.key,
          ws.brainHeaders,
        )
      ).body,
    );
    expect(limited.stakeholders).toHaveLength(1);
    expect(limited.interactions).toHaveLength(1);
    // Sam's removal kept the scope argument (Dana was in it too): two interactions, one shown.
    expect(limited.truncated).toEqual({ stakeholders: true, interactions: true });
    expect(limited.counts).toMatchObject({ stakeholders: 2, interactions: 2 });
    expect(limited.interactions[0].participants).toEqual([dana]);
    // The live map's shape: what the graph holds at the top level, the metadata beside it, no wrapper.
    const raw = await app.get('/v1/stakeholder-map', ws.key, ws.brainHeaders);
    expect(Object.keys(raw.body).sort()).toEqual(
      [
        'brain_id',
        'counts',
        'edges',
        'interactions',
        'latest_version',
        'resource_id',
        'revision',
        'risks',
        'stakeholders',
        'summary',
        'truncated',
        'updated_at',
      ].sort(),
    );
  });

  it('maps are resources: created, listed and read in their brain, and on the resource event stream', async () => {
    const ws = await buildWorkspace(app);
    const created = await app.post(
      '/v1/resources/stakeholder_maps',
      ws.key,
      { name: 'Vendor selection', description: 'who decides' },
      ws.brainHeaders,
    );
    expect(created.status, created.text).toBe(201);
    const head = MapHead.parse(created.body);
    expect(head).toMatchObject({
      kind: 'stakeholder_map',
      name: 'Vendor selection',
      is_default: false,
      brain_id: ws.brainId,
      revision: 0,
    });
    await patch(ws, head.id, { dsl: 'stakeholder "Pat" influence=low\nsummary "Pat signs"' });
    const read = MapRead.parse((await app.get(`/v1/resources/stakeholder_maps/${head.id}`, ws.key)).body);
    expect(read.stakeholder_map).toMatchObject({ revision: 1, summary: 'Pat signs', counts: { stakeholders: 1 } });
    expect(read.live.stakeholders.map((s) => s.name)).toEqual(['Pat']);
    await defaultMap(ws);
    const list = MapList.parse((await app.get('/v1/resources/stakeholder_maps', ws.key, ws.brainHeaders)).body);
    expect(list.total).toBe(2);
    expect(list.stakeholder_maps.map((m) => m.is_default).sort()).toEqual([false, true]);
    // The live read of a named map.
    expect(LiveMap.parse((await app.get(`/v1/stakeholder-map?resource_id=${head.id}`, ws.key)).body).summary).toBe(
      'Pat signs',
    );

    const sse = await readSse(`${app.url}/v1/resource-events/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      until: (ev) => ev.length >= 3,
      timeoutMs: 10_000,
    });
    const events = (
      sse.events.map(dataOf) as { action: string; resource: { kind: string; id: string; brain_id: string } }[]
    ).filter((e) => e.resource.kind === 'stakeholder_map');
    expect(events.map((e) => `${e.action}:${e.resource.id}`)).toEqual([
      `created:${head.id}`,
      `updated:${head.id}`,
      `created:${list.stakeholder_maps.find((m) => m.is_default)!.id}`,
    ]);
    expect(events.every((e) => e.resource.brain_id === ws.brainId)).toBe(true);
  });

  it('concurrent first reads make one default map; concurrent patches all land, one revision each', async () => {
    const ws = await buildWorkspace(app);
    const firsts = await Promise.all(
      Array.from({ length: 6 }, () => app.get('/v1/stakeholder-map', ws.key, ws.brainHeaders)),
    );
    const ids = new Set(firsts.map((r) => LiveMap.parse(r.body).resource_id));
    expect(ids.size).toBe(1);
    const mapId = [...ids][0];
    const n = 12;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        patch(ws, mapId, {
          ops: [
            { op: 'upsert_stakeholder', name: `Person ${i}` },
            { op: 'add_interaction', summary: `call ${i}`, participants: [`Person ${i}`, 'Shared Lead'] },
          ],
        }),
      ),
    );
    expect(results.map((r) => `${r.status} ${r.status === 200 ? '' : r.text}`)).toEqual(Array(n).fill('200 '));
    expect(results.map((r) => PatchResult.parse(r.body).revision).sort((a, b) => a - b)).toEqual(
      Array.from({ length: n }, (_, i) => i + 1),
    );
    const live = await defaultMap(ws);
    expect(live.revision).toBe(n);
    // Every patch was applied to the graph the previous one left: nothing lost, 'Shared Lead' made once.
    expect(live.counts).toEqual({ stakeholders: n + 1, interactions: n, edges: 0, risks: 0 });
    // Only the newest revisions are kept.
    expect(await app.deps.db.collection('stakeholder_map_revisions').countDocuments({ mapId })).toBeLessThanOrEqual(10);
    const sse = await readSse(`${app.url}/v1/resource-events/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      until: (ev) => ev.length >= n + 1,
      timeoutMs: 10_000,
    });
    expect(sse.events.map(dataOf).filter((e) => (e as { action: string }).action === 'created')).toHaveLength(1);
  });

  it('a second workspace sees nothing of the first', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const mapId = (await defaultMap(ws)).resource_id;
    const r = PatchResult.parse(
      (
        await patch(ws, mapId, {
          patch_mode: 'stakeholder_map_record_version',
          ops: [{ op: 'upsert_stakeholder', name: 'Secret' }],
        })
      ).body,
    );
    const sid = r.changes.added.stakeholders[0];
    const versionId = r.version!.id;
    for (const path of [
      `/v1/resources/stakeholder_maps/${mapId}`,
      `/v1/resources/stakeholder_maps/${mapId}/history`,
      `/v1/resources/stakeholder_maps/${mapId}/versions/1`,
      `/v1/resources/stakeholder_maps/live?resource_id=${mapId}`,
      `/v1/resources/stakeholder_maps/diff?from=1&to=live&resource_id=${mapId}`,
      `/v1/stakeholder-map?resource_id=${mapId}`,
      `/v1/stakeholders/briefing/${sid}`,
      `/v1/stakeholder-map/briefing/${sid}`,
      `/v1/stakeholder-map/versions/${versionId}`,
      `/v1/stakeholder-map/versions?resource_id=${mapId}`,
    ]) {
      const res = await app.get(path, other.key, other.brainHeaders);
      expect(res.status, path).toBe(404);
    }
    expect((await patch(other, mapId, { ops: [{ op: 'set_summary', summary: 'x' }] })).status).toBe(404);
    expect(
      (await app.post('/v1/stakeholder-map/versions', other.key, { resource_id: mapId }, other.brainHeaders)).status,
    ).toBe(404);
    expect(
      (await app.post('/v1/stakeholder-map/extract', other.key, { text: 'x', resource_id: mapId }, other.brainHeaders))
        .status,
    ).toBe(404);
    // Its own default map is its own, and empty; its list has only that.
    const own = await defaultMap(other);
    expect(own.resource_id).not.toBe(mapId);
    expect(own.counts.stakeholders).toBe(0);
    expect(
      MapList.parse((await app.get('/v1/resources/stakeholder_maps', other.key)).body).stakeholder_maps.map(
        (m) => m.id,
      ),
    ).toEqual([own.resource_id]);
    // The first workspace's other brain does not see this brain's map either (X-Brain-Id scopes reads).
    const brain2 = await app.post('/v1/brains', await ws.jwt(['workspace_admin']), { name: 'second' });
    expect(
      (await app.get(`/v1/resources/stakeholder_maps/${mapId}`, ws.key, { 'x-brain-id': String(brain2.body.id) }))
        .status,
    ).toBe(404);
  });

  it('every 400 of the routes', async () => {
    const ws = await buildWorkspace(app);
    const mapId = (await defaultMap(ws)).resource_id;
    const h = ws.brainHeaders;
    const bad: [string, () => Promise<{ status: number; body: unknown }>, RegExp][] = [
      [
        'diff from=0',
        () => app.get('/v1/resources/stakeholder_maps/diff?from=0&to=live', ws.key, h),
        /from: must be live or a positive integer/,
      ],
      ['diff from=abc', () => app.get('/v1/resources/stakeholder_maps/diff?from=abc&to=live', ws.key, h), /from/],
      [
        'diff to=-1',
        () => app.get('/v1/resources/stakeholder_maps/diff?from=live&to=-1', ws.key, h),
        /to: must be live or a positive integer/,
      ],
      ['diff to=1.5', () => app.get('/v1/resources/stakeholder_maps/diff?from=live&to=1.5', ws.key, h), /to/],
      ['diff without from', () => app.get('/v1/resources/stakeholder_maps/diff?to=live', ws.key, h), /from/],
      [
        'diff resource_id not a UUID',
        () => app.get('/v1/resources/stakeholder_maps/diff?from=live&to=live&resource_id=nope', ws.key, h),
        /resource_id: must be a UUID/,
      ],
      [
        'diff without a brain',
        () => app.get('/v1/resources/stakeholder_maps/diff?from=live&to=live', ws.key),
        /X-Brain-Id/,
      ],
      [
        'live stakeholder_limit=0',
        () => app.get('/v1/resources/stakeholder_maps/live?stakeholder_limit=0', ws.key, h),
        /stakeholder_limit/,
      ],
      [
        'live interaction_limit=x',
        () => app.get('/v1/stakeholder-map?interaction_limit=x', ws.key, h),
        /interaction_limit/,
      ],
      ['live without a brain', () => app.get('/v1/stakeholder-map', ws.key), /X-Brain-Id: required/],
      [
        'X-Brain-Id not a UUID',
        () => app.get('/v1/stakeholder-map', ws.key, { 'x-brain-id': 'nope' }),
        /X-Brain-Id must be a UUID/,
      ],
      ['list brain_id not a UUID', () => app.get('/v1/resources/stakeholder_maps?brain_id=nope', ws.key), /brain_id/],
      [
        'create without a name',
        () => app.post('/v1/resources/stakeholder_maps', ws.key, { description: 'd' }, h),
        /name/,
      ],
      [
        'create with an unknown field',
        () => app.post('/v1/resources/stakeholder_maps', ws.key, { name: 'n', graph: {} }, h),
        /graph|Unrecognized/i,
      ],
      [
        'read with a resourceId that is not a UUID',
        () => app.get('/v1/resources/stakeholder_maps/nope', ws.key),
        /resourceId: must be a UUID/,
      ],
      [
        'history with a resourceId that is not a UUID',
        () => app.get('/v1/resources/stakeholder_maps/nope/history', ws.key),
        /resourceId/,
      ],
      ['version 0', () => app.get(`/v1/resources/stakeholder_maps/${mapId}/versions/0`, ws.key), /version/],
      ['patch with neither ops nor dsl', () => patch(ws, mapId, {}), /send ops or dsl/],
      [
        'patch with ops and dsl',
        () => patch(ws, mapId, { ops: [{ op: 'set_summary', summary: 's' }], dsl: 'summary "s"' }),
        /not both/,
      ],
      ['patch with an unknown op', () => patch(ws, mapId, { ops: [{ op: 'merge_everyone' }] }), /ops\.0\.op/],
      [
        'patch with a bad polarity',
        () => patch(ws, mapId, { ops: [{ op: 'set_edge', from: 'A', to: 'B', polarity: 'friends' }] }),
        /polarity/,
      ],
      [
        'patch with a strength above 1',
        () => patch(ws, mapId, { ops: [{ op: 'set_edge', from: 'A', to: 'B', polarity: 'positive', strength: 2 }] }),
        /strength/,
      ],
      ['patch with an empty ops list', () => patch(ws, mapId, { ops: [] }), /ops/],
      [
        'patch naming an unknown stakeholder id',
        () => patch(ws, mapId, { ops: [{ op: 'add_interaction', summary: 's', participants: [randomUUID()] }] }),
        /ops\[0\] \(add_interaction\): no stakeholder/,
      ],
      [
        'patch removing an unknown stakeholder',
        () => patch(ws, mapId, { ops: [{ op: 'remove_stakeholder', stakeholder: 'Nobody' }] }),
        /no stakeholder named "Nobody"/,
      ],
      ['patch with a DSL error', () => patch(ws, mapId, { dsl: 'stakeholder "A"\nally "A"' }), /dsl line 2/],
      [
        'patch with a label in live mode',
        () => patch(ws, mapId, { ops: [{ op: 'set_summary', summary: 's' }], label: 'l' }),
        /label/,
      ],
      [
        'patch with an unknown patch_mode',
        () => patch(ws, mapId, { patch_mode: 'replace', ops: [{ op: 'set_summary', summary: 's' }] }),
        /patch_mode/,
      ],
      [
        'patch with a bad occurred_at',
        () =>
          patch(ws, mapId, {
            ops: [{ op: 'add_interaction', summary: 's', participants: ['A'], occurred_at: 'yesterday' }],
          }),
        /occurred_at/,
      ],
      [
        'patch resourceId not a UUID',
        () => patch(ws, 'nope', { ops: [{ op: 'set_summary', summary: 's' }] }),
        /resourceId/,
      ],
      [
        'briefing id not a UUID (resource family)',
        () => app.get('/v1/stakeholders/briefing/nope', ws.key, h),
        /id: must be a UUID/,
      ],
      [
        'briefing id not a UUID (short family)',
        () => app.get('/v1/stakeholder-map/briefing/nope', ws.key, h),
        /id: must be a UUID/,
      ],
      [
        'briefing interaction_limit=0',
        () => app.get(`/v1/stakeholder-map/briefing/${randomUUID()}?interaction_limit=0`, ws.key, h),
        /interaction_limit/,
      ],
      [
        'save version with a non-string label',
        () => app.post('/v1/stakeholder-map/versions', ws.key, { label: 5 }, h),
        /label/,
      ],
      ['save version without a brain', () => app.post('/v1/stakeholder-map/versions', ws.key, {}), /X-Brain-Id/],
      ['versions limit=0', () => app.get('/v1/stakeholder-map/versions?limit=0', ws.key, h), /limit/],
      [
        'version id neither UUID nor number',
        () => app.get('/v1/stakeholder-map/versions/latest', ws.key, h),
        /version id \(UUID\) or a positive version number/,
      ],
      ['version number without a brain', () => app.get('/v1/stakeholder-map/versions/1', ws.key), /X-Brain-Id/],
      [
        'extract with neither text nor meeting_id',
        () => app.post('/v1/stakeholder-map/extract', ws.key, {}, h),
        /send text or meeting_id/,
      ],
      ['extract with an empty text', () => app.post('/v1/stakeholder-map/extract', ws.key, { text: '   ' }, h), /text/],
      [
        'extract with an unknown model provider',
        () => app.post('/v1/stakeholder-map/extract', ws.key, { text: 't', model: 'nope/x' }, h),
        /Unknown model provider "nope"/,
      ],
      [
        'extract with an offline model',
        () => app.post('/v1/stakeholder-map/extract', ws.key, { text: 't', model: 'local/json' }, h),
        /local\/json cannot answer with structured JSON/,
      ],
      [
        'extract with a meeting_id that is not a UUID',
        () => app.post('/v1/stakeholder-map/extract', ws.key, { meeting_id: 'm1' }, h),
        /meeting_id: must be a UUID/,
      ],
      [
        'extract without a brain',
        () => app.post('/v1/stakeholder-map/extract', ws.key, { text: 't', model: 'openai/gpt-4o-mini' }),
        /X-Brain-Id/,
      ],
    ];
    for (const [name, call, msg] of bad) {
      const res = await call();
      expect(res.status, name).toBe(400);
      expect(res.body, name).toMatchObject({ code: 'VALIDATION_ERROR' });
      expect((res.body as { message: string }).message, name).toMatch(msg);
    }
    // None of them changed the map; a version that does not exist is a 404, not a 400.
    expect((await defaultMap(ws)).revision).toBe(0);
    expect((await app.get(`/v1/resources/stakeholder_maps/diff?from=7&to=live`, ws.key, h)).status).toBe(404);
    expect((await app.post('/v1/stakeholder-map/extract', ws.key, { meeting_id: randomUUID() }, h)).status).toBe(404);
  });
});

/** A structured answer as the model would give it for the transcript below. */
const ANSWER = {
  stakeholders: [
    { name: 'Dana Lee', role: 'CFO', organization: 'Acme', influence: 'high', stance: 'opposed' },
    { name: 'Priya Nair', role: 'Head of Ops', organization: null, influence: 'medium', stance: 'supportive' },
  ],
  interactions: [
    {
      summary: 'Dana pushed back on the Q3 budget; Priya backed the rollout',
      participants: ['Dana Lee', 'Priya Nair'],
      sentiment: 'negative',
      topics: ['Q3 budget'],
    },
  ],
  relationships: [
    { from: 'Priya Nair', to: 'Dana Lee', polarity: 'negative', relation: 'disagree on rollout pace', strength: 0.6 },
  ],
  risks: [
    { title: 'Rollout delayed', description: 'budget not approved', severity: 'high', stakeholders: ['Dana Lee'] },
  ],
  summary: 'Finance is skeptical; operations is pushing.',
};
const TRANSCRIPT =
  'Dana Lee (CFO): I cannot approve the Q3 budget as it stands.\nPriya Nair: We need the rollout this quarter.';

describe('extraction', () => {
  it('asks the model for JSON with a schema (through a provider outage) and applies the answer as patch ops', async () => {
    const ws = await buildWorkspace(app);
    const mapId = (await defaultMap(ws)).resource_id;
    await patch(ws, mapId, { ops: [{ op: 'upsert_stakeholder', name: 'Dana Lee', notes: 'met at the offsite' }] });
    const seen: ScriptedRequestBody[] = [];
    const marker = randomUUID();
    llm.setDefault((body) => {
      if (!lastUserText(body).includes(marker)) return { text: 'unexpected' };
      seen.push(body);
      // The first call finds the provider overloaded (503, Retry-After), as real providers do; the retry answers slowly, in pieces.
      if (seen.length === 1)
        return { status: 503, errorMessage: 'The engine is currently overloaded', headers: { 'retry-after': '1' } };
      return {
        text: JSON.stringify(ANSWER),
        firstTokenMs: 300,
        delayMsPerChunk: 5,
        usage: { prompt_tokens: 900, completion_tokens: 150 },
      };
    });
    const res = await app.post(
      '/v1/stakeholder-map/extract',
      ws.key,
      { text: `${TRANSCRIPT}\n(${marker})`, model: 'openai/gpt-4o-mini' },
      ws.brainHeaders,
    );
    expect(res.status, res.text).toBe(202);
    const accepted = ExtractAccepted.parse(res.body);
    expect(accepted.resource_id).toBe(mapId);
    const job = await settleJob(app, ws.key, accepted.job_id, 90_000);
    expect(job.status, job.failedReason ?? '').toBe('completed');
    expect(job.result).toMatchObject({
      resource_id: mapId,
      revision: 2,
      op_count: 6,
      source: { type: 'text', id: null },
    });

    // What the model was asked: structured output with the extraction schema, the people already on the map, the transcript.
    expect(seen).toHaveLength(2);
    const format = seen[1].response_format as {
      type: string;
      json_schema: { name: string; strict: boolean; schema: { required: string[] } };
    };
    expect(format.type).toBe('json_schema');
    expect(format.json_schema).toMatchObject({ name: 'stakeholder_map_extraction', strict: true });
    expect(format.json_schema.schema.required).toContain('stakeholders');
    expect(lastUserText(seen[1])).toContain('- Dana Lee');
    expect(lastUserText(seen[1])).toContain('I cannot approve the Q3 budget');

    const live = await defaultMap(ws);
    const dana = live.stakeholders.find((s) => s.name === 'Dana Lee')!;
    // The existing stakeholder was updated, not duplicated, and kept what the answer did not say.
    expect(live.counts).toEqual({ stakeholders: 2, interactions: 1, edges: 1, risks: 1 });
    expect(dana).toMatchObject({ role: 'CFO', organization: 'Acme', stance: 'opposed', notes: 'met at the offsite' });
    expect(live.interactions[0]).toMatchObject({
      kind: 'meeting',
      sentiment: 'negative',
      source: { type: 'text', id: null },
    });
    expect(live.summary).toBe(ANSWER.summary);
    const b = Briefing.parse((await app.get(`/v1/stakeholder-map/briefing/${dana.id}`, ws.key, ws.brainHeaders)).body);
    expect(b.tensions.map((t) => t.stakeholder.name)).toEqual(['Priya Nair']);
    expect(b.risks.map((r) => r.title)).toEqual(['Rollout delayed']);

    // The billed call is in the usage ledger, once, attributed to the job.
    const rows = await app.deps.db
      .collection('usage_ledger')
      .find({ workspaceId: ws.workspaceId, jobId: accepted.job_id })
      .toArray();
    expect(rows.map((r) => [r.kind, r.provider, r.model, r.inputTokens, r.outputTokens])).toEqual([
      ['chat', 'openai', 'gpt-4o-mini', 900, 150],
    ]);
  });

  it('a finalized meeting feeds the map once through the meeting hook', async () => {
    const ws = await buildWorkspace(app);
    const marker = randomUUID();
    let calls = 0;
    llm.setDefault((body) => {
      if (!lastUserText(body).includes(marker)) return { text: 'unexpected' };
      calls++;
      return { text: JSON.stringify(ANSWER), usage: { prompt_tokens: 500, completion_tokens: 120 } };
    });
    const meetingId = randomUUID();
    const finalizedAt = new Date('2025-02-03T15:00:00Z');
    // The meetings family calls this when a transcript is finalized (docs/stakeholder-maps.md, Meeting hook).
    const hook = () =>
      app.services.stakeholderMaps.extractFromMeeting(ws.workspaceId, {
        id: meetingId,
        brainId: ws.brainId,
        text: `${TRANSCRIPT}\n(${marker})`,
        finalizedAt,
      });
    const first = (await hook())!;
    const again = (await hook())!;
    expect(again.job_id).toBe(first.job_id);
    const job = await settleJob(app, ws.key, first.job_id, 90_000);
    expect(job.status, job.failedReason ?? '').toBe('completed');
    expect(calls).toBe(1);
    const live = await defaultMap(ws);
    expect(live.resource_id).toBe(first.resource_id);
    expect(live.interactions[0]).toMatchObject({
      occurred_at: finalizedAt.toISOString(),
      source: { type: 'meeting', id: meetingId },
    });
    expect(live.revision).toBe(1);
  });

  it('an answer that never matches the schema fails the job with the reason, and the map is unchanged', async () => {
    const ws = await buildWorkspace(app);
    const marker = randomUUID();
    let calls = 0;
    llm.setDefault((body) => {
      if (!lastUserText(body).includes(marker)) return { text: 'unexpected' };
      calls++;
      return { text: JSON.stringify({ people: ['Dana'] }) };
    });
    const res = await app.post(
      '/v1/stakeholder-map/extract',
      ws.key,
      { text: `notes (${marker})`, model: 'openai/gpt-4o-mini' },
      ws.brainHeaders,
    );
    const job = await settleJob(app, ws.key, ExtractAccepted.parse(res.body).job_id, 90_000);
    expect(job.status).toBe('failed');
    expect(job.failedReason).toMatch(/does not match the extraction schema/);
    expect(calls).toBe(3);
    expect((await defaultMap(ws)).revision).toBe(0);
  });
});
