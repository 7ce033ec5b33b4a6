import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ReceptorList } from '../../src/receptors/schemas.js';
import { ShareView } from '../../src/shares/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * Threat class: a share link reaches more than it created (docs/security.md). The actor is an
 * anonymous holder of a receptor's share link; what they must never reach is any other trace or
 * job of the workspace (a private conversation, a member's fire of the same receptor, another
 * link's conversation) nor any file another link uploaded. Each such id answers 404, as a missing one.
 */
const { app } = useSimPlatform({ firstTokenMs: [5, 20], interTokenMs: 2, tokens: [2, 4] });
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
const q = (t: string) => `t=${encodeURIComponent(t)}`;

async function receptorOf(ws: Ws, targetId: string) {
  return ReceptorList.parse((await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body).receptors.find(
    (x) => x.executable_target.id === targetId,
  )!;
}

async function share(ws: Ws, targetId: string, body: Record<string, unknown> = {}) {
  const r = await receptorOf(ws, targetId);
  const created = await app.post(`/v1/receptors/${ws.workspaceId}/${r.id}/share`, ws.key, body);
  expect(created.status, created.text).toBe(201);
  return { receptor: r, token: ShareView.parse(created.body).token! };
}

async function sharedNeuron(ws: Ws, body: Record<string, unknown> = {}) {
  const n = await app.post('/v1/neurons', ws.key, {
    name: `shared ${randomUUID().slice(0, 6)}`,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim' },
  });
  expect(n.status, n.text).toBe(201);
  return share(ws, String(n.body.id), body);
}

async function messageCount(ws: Ws, traceId: string) {
  const t = await app.get(`/v1/traces/${traceId}`, ws.key);
  expect(t.status, t.text).toBe(200);
  return (t.body.trace as { message_count: number }).message_count;
}

describe('a share link reaches only the traces and jobs it created', () => {
  it("a pathway's link holder cannot append to a private trace by naming its trace_id (404, nothing stored, nothing run)", async () => {
    const ws = await buildWorkspace(app);
    const privateTrace = randomUUID();
    const secret = await app.post(`/v1/traces/${privateTrace}/messages`, ws.key, { content: 'board minutes: layoffs' });
    expect(secret.status, secret.text).toBe(201);
    const graph = {
      nodes: [
        { id: 'a', type: 'input', data: {} },
        { id: 'b', type: 'output', data: {} },
      ],
      edges: [{ source: 'a', target: 'b' }],
    };
    const p = await app.post('/v1/pathways', ws.key, { name: 'public flow', pathway_graph: graph }, ws.brainHeaders);
    expect(p.status, p.text).toBe(201);
    const s = await share(ws, String(p.body.id));

    const attack = await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`, undefined, {
      message: 'appended by a stranger',
      trace_id: privateTrace,
    });
    expect(attack.status, attack.text).toBe(404);
    expect(attack.body).toMatchObject({ code: 'NOT_FOUND' });
    expect(attack.text).not.toContain('board minutes');
    // A refusal is not half done: no job started, the trace unchanged.
    const view = ShareView.parse(
      (await app.get(`/v1/receptors/${ws.workspaceId}/${s.receptor.id}/share`, ws.key)).body,
    );
    expect(view.budget.used_requests).toBe(0);
    expect(await messageCount(ws, privateTrace)).toBe(1);
    // The same answer as a trace that does not exist.
    const missing = await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`, undefined, {
      message: 'x',
      trace_id: randomUUID(),
    });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual(attack.body);

    // The link's own run works, and its trace_id may be continued (before and after the first run ends).
    const own = await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`, undefined, {
      message: 'mine',
    });
    expect(own.status, own.text).toBe(202);
    const next = await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`, undefined, {
      message: 'mine again',
      trace_id: own.body.trace_id,
    });
    expect(next.status, next.text).toBe(202);
    await settleJob(app, ws.key, String(own.body.job_id));
    await settleJob(app, ws.key, String(next.body.job_id));
  });

  it("a neuron's link holder cannot read, stream or continue a member's conversation with the same receptor, nor follow its job", async () => {
    const ws = await buildWorkspace(app);
    const s = await sharedNeuron(ws);
    const member = await ws.jwt([]);
    const fired = await app.post(`/v1/receptors/${s.receptor.id}/fire`, member, { message: 'my salary is 91k' });
    expect(fired.status, fired.text).toBe(202);
    const memberTrace = String(fired.body.trace_id);
    const memberJob = String(fired.body.job_id);
    await settleJob(app, ws.key, memberJob);

    const names = `${q(s.token)}&receptor_id=${s.receptor.id}`;
    const reads = [
      `/v1/public/traces/${memberTrace}?${names}`,
      `/v1/traces/${memberTrace}/messages?${names}`,
      `/v1/traces/${memberTrace}/events?${names}`,
      `/v1/public/traces/${memberTrace}/events?${names}`,
      `/v1/public/jobs/${memberJob}/stream?${names}`,
    ];
    for (const path of reads) {
      const r = await app.get(path, undefined);
      expect(r.status, `${path}: ${r.text}`).toBe(404);
      expect(r.text).not.toContain('91k');
    }
    const cont = await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`, undefined, {
      message: 'what was my salary again?',
      trace_id: memberTrace,
    });
    expect(cont.status, cont.text).toBe(404);
    expect(await messageCount(ws, memberTrace)).toBe(2);

    // The link's own conversation reads back, and keeps doing so after a rotation of its token.
    const own = await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`, undefined, {
      message: 'hello',
    });
    expect(own.status, own.text).toBe(202);
    await settleJob(app, ws.key, String(own.body.job_id));
    const ownTrace = String(own.body.trace_id);
    expect((await app.get(`/v1/traces/${ownTrace}/messages?${names}`, undefined)).status).toBe(200);
    const stored = await app.deps.db
      .collection('traces')
      .findOne({ workspaceId: ws.workspaceId, traceId: ownTrace }, { projection: { shareId: 1 } });
    const memberStored = await app.deps.db
      .collection('traces')
      .findOne({ workspaceId: ws.workspaceId, traceId: memberTrace }, { projection: { shareId: 1 } });
    expect(stored?.shareId).toBeTruthy();
    expect(memberStored?.shareId ?? null).toBeNull();
    const rotated = await app.post(`/v1/receptors/${ws.workspaceId}/${s.receptor.id}/share/rotate`, ws.key, {});
    const token = ShareView.parse(rotated.body).token!;
    const again = await app.get(`/v1/public/traces/${ownTrace}?${q(token)}&receptor_id=${s.receptor.id}`, undefined);
    expect(again.status, again.text).toBe(200);
  });

  it('a new link of the same receptor reaches neither the conversations nor the files of the link it replaced', async () => {
    const ws = await buildWorkspace(app);
    const first = await sharedNeuron(ws, { allow_files: true });
    const form = new FormData();
    form.append('file', new Blob(['the old link holder wrote this'], { type: 'text/plain' }), 'note.txt');
    const up = await fetch(`${app.url}/v1/public/receptors/by-id/${first.receptor.id}/assets?${q(first.token)}`, {
      method: 'POST',
      body: form,
    });
    expect(up.status).toBe(201);
    const assetId = ((await up.json()) as { asset: { id: string } }).asset.id;
    const ex = await app.post(`/v1/public/receptors/by-id/${first.receptor.id}/execute?${q(first.token)}`, undefined, {
      message: 'first link',
    });
    expect(ex.status).toBe(202);
    await settleJob(app, ws.key, String(ex.body.job_id));

    expect((await app.del(`/v1/receptors/${ws.workspaceId}/${first.receptor.id}/share`, ws.key)).status).toBe(200);
    const created = await app.post(`/v1/receptors/${ws.workspaceId}/${first.receptor.id}/share`, ws.key, {
      allow_files: true,
    });
    const second = ShareView.parse(created.body).token!;
    const url = `/v1/public/receptors/by-id/${first.receptor.id}/execute?${q(second)}`;
    const withFile = await app.post(url, undefined, { message: 'read it', asset_ids: [assetId] });
    expect(withFile.status, withFile.text).toBe(400);
    expect(String(withFile.body.message)).toMatch(/asset_ids/);
    const old = await app.get(
      `/v1/public/traces/${String(ex.body.trace_id)}?${q(second)}&receptor_id=${first.receptor.id}`,
      undefined,
    );
    expect(old.status).toBe(404);
    expect((await app.post(url, undefined, { message: 'x', trace_id: ex.body.trace_id })).status).toBe(404);
  });
});
