import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ReceptorList } from '../../src/receptors/schemas.js';
import { ShareView } from '../../src/shares/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';
import { dataOf, readSse } from '../support/sse.js';

const { app } = useSimPlatform({ firstTokenMs: [20, 60], interTokenMs: 5, tokens: [3, 6] });
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function sharedNeuron(ws: Ws, name: string, share: Record<string, unknown> = {}) {
  const n = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim' },
  });
  expect(n.status).toBe(201);
  const r = ReceptorList.parse((await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body).receptors.find(
    (x) => x.executable_target.id === String(n.body.id),
  )!;
  const created = await app.post(`/v1/receptors/${ws.workspaceId}/${r.slug}/share`, ws.key, share);
  expect(created.status).toBe(201);
  const view = ShareView.parse(created.body);
  const slug = (await app.services.workspaces.findWorkspace(ws.workspaceId))!.slug;
  return { receptor: r, token: view.token!, view, wsSlug: slug, neuronId: String(n.body.id) };
}
const q = (t: string) => `t=${encodeURIComponent(t)}`;

describe('share management', () => {
  it('create shows the token once; get shows its prefix; one live token; rotate and revoke take effect at once', async () => {
    const ws = await buildWorkspace(app);
    const s = await sharedNeuron(ws, 'shared', {
      allow_files: true,
      customization: { title: 'Ask me', colors: { primary: '#1f6feb' }, logo_url: 'https://example.com/logo.png' },
    });
    expect(s.token).toMatch(/^cxs_/);
    expect(s.view.share_url).toContain(`/share/${ws.workspaceId}/${s.receptor.slug}?t=`);
    const got = ShareView.parse((await app.get(`/v1/receptors/${s.wsSlug}/${s.receptor.id}/share`, ws.key)).body);
    expect(got.token).toBeUndefined();
    expect(got.token_prefix).toBe(s.token.slice(0, 10));
    expect((await app.post(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share`, ws.key, {})).status).toBe(409);
    // The token is stored hashed: nothing in the database holds it.
    const stored = await app.deps.db.collection('share_tokens').find({}).toArray();
    expect(JSON.stringify(stored)).not.toContain(s.token);

    const pub = `/v1/public/receptors/${s.wsSlug}/${s.receptor.slug}`;
    // Anonymous share traffic is limited per minute (per token and per client address); the headers say so.
    const limited = await app.get(`${pub}?${q(s.token)}`, undefined);
    expect(limited.headers.get('ratelimit-limit')).toBe(String(app.config.SHARE_REQUESTS_PER_MINUTE));
    const remaining = Number(limited.headers.get('ratelimit-remaining'));
    expect(Number((await app.get(`${pub}?${q(s.token)}`, undefined)).headers.get('ratelimit-remaining'))).toBe(
      remaining - 1,
    );
    expect((await app.get(`${pub}?${q(s.token)}`, undefined)).body).toMatchObject({
      allow_files: true,
      customization: { title: 'Ask me' },
      receptor: { id: s.receptor.id },
    });
    const rotated = ShareView.parse(
      (
        await app.post(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share/rotate`, ws.key, {
          allow_files: false,
        })
      ).body,
    );
    expect(rotated.token).not.toBe(s.token);
    const old = await app.get(`${pub}?${q(s.token)}`, undefined);
    expect(old.status).toBe(401);
    expect(old.body).toMatchObject({ code: 'AUTH_REQUIRED' });
    expect((await app.get(`${pub}?${q(rotated.token!)}`, undefined)).body).toMatchObject({ allow_files: false });
    expect((await app.del(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share`, ws.key)).status).toBe(200);
    expect((await app.get(`${pub}?${q(rotated.token!)}`, undefined)).status).toBe(401);
    expect((await app.get(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share`, ws.key)).status).toBe(404);

    // Bad settings are 400; another workspace is 404.
    expect(
      (
        await app.post(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share`, ws.key, {
          customization: { logo_url: 'javascript:alert(1)' },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await app.post(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share`, ws.key, {
          customization: { colors: { primary: 'red;}' } },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await app.post(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share`, ws.key, {
          expires_at: '2001-01-01T00:00:00Z',
        })
      ).status,
    ).toBe(400);
    const other = await buildWorkspace(app);
    expect((await app.post(`/v1/receptors/${ws.workspaceId}/${s.receptor.slug}/share`, other.key, {})).status).toBe(
      404,
    );
  });

  it('an expired token is refused', async () => {
    const ws = await buildWorkspace(app);
    const s = await sharedNeuron(ws, 'expiring', { expires_at: new Date(Date.now() + 1500).toISOString() });
    const pub = `/v1/public/receptors/by-id/${s.receptor.id}?${q(s.token)}`;
    expect((await app.get(pub, undefined)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1700));
    const res = await app.get(pub, undefined);
    expect(res.status).toBe(401);
    expect(String(res.body.message)).toMatch(/expired/);
  });
});

describe('public routes', () => {
  it("execute by slug and by id streams a run on one trace; trace reads need the link's names; another link's trace or job is 404", async () => {
    const ws = await buildWorkspace(app);
    const s = await sharedNeuron(ws, 'public one');
    const b = await sharedNeuron(ws, 'public two');
    const ex = await app.post(`/v1/public/receptors/${s.wsSlug}/${s.receptor.slug}/execute?${q(s.token)}`, undefined, {
      message: 'hello there',
      stream: true,
    });
    expect(ex.status).toBe(202);
    expect(ex.body).toMatchObject({ status: 'pending', receptor_id: s.receptor.id });
    const jobId = String(ex.body.job_id);
    const traceId = String(ex.body.trace_id);
    const sse = await readSse(`${app.url}/v1/public/jobs/${jobId}/stream?${q(s.token)}&receptor_id=${s.receptor.id}`, {
      timeoutMs: 30_000,
    });
    expect(sse.ended).toBe(true);
    expect(dataOf(sse.events.at(-1)!).type).toBe('complete');
    // the body form of the token, by id, continuing the same conversation
    const ex2 = await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute`, undefined, {
      share_token: s.token,
      message: 'and more',
      trace_id: traceId,
    });
    expect(ex2.status).toBe(202);
    expect(ex2.body.trace_id).toBe(traceId);
    await settleJob(app, ws.key, String(ex2.body.job_id));

    const names = `&workspace=${s.wsSlug}&receptor=${s.receptor.slug}`;
    const meta = await app.get(`/v1/public/traces/${traceId}?${q(s.token)}${names}`, undefined);
    expect(meta.status).toBe(200);
    expect(meta.body.trace).toMatchObject({ trace_id: traceId, synapse_id: s.receptor.id });
    const msgs = await app.get<{ engrams: unknown[] }>(
      `/v1/traces/${traceId}/messages?${q(s.token)}&receptor_id=${s.receptor.id}`,
      undefined,
    );
    expect(msgs.status).toBe(200);
    expect(msgs.body.engrams).toHaveLength(4);
    expect((await app.get(`/v1/traces/${traceId}/messages?${q(s.token)}`, undefined)).status).toBe(400); // names required
    // Link B may not read link A's trace or job, even naming itself: they are not its conversations (404).
    expect(
      (await app.get(`/v1/traces/${traceId}/messages?${q(b.token)}&receptor_id=${b.receptor.id}`, undefined)).status,
    ).toBe(404);
    expect(
      (await app.get(`/v1/public/traces/${traceId}?${q(b.token)}&receptor_id=${b.receptor.id}`, undefined)).status,
    ).toBe(404);
    expect(
      (await app.get(`/v1/traces/${traceId}/messages?${q(b.token)}&receptor_id=${s.receptor.id}`, undefined)).status,
    ).toBe(403);
    const foreign = await app.get(
      `/v1/public/jobs/${jobId}/stream?${q(b.token)}&receptor_id=${b.receptor.id}`,
      undefined,
    );
    expect(foreign.status).toBe(404);
    expect(
      (await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(b.token)}`, undefined, { message: 'x' }))
        .status,
    ).toBe(403);
    expect(
      (
        await app.post(`/v1/public/receptors/by-id/${b.receptor.id}/execute?${q(b.token)}`, undefined, {
          message: 'x',
          trace_id: traceId,
        })
      ).status,
    ).toBe(404);
    // A job of the workspace that is not the link's (an invoke) is 404 too.
    const inv = await app.post(`/v1/neurons/${s.neuronId}/invoke`, ws.key, { message: 'direct' });
    expect(
      (
        await app.get(
          `/v1/public/jobs/${String(inv.body.job_id)}/stream?${q(s.token)}&receptor_id=${s.receptor.id}`,
          undefined,
        )
      ).status,
    ).toBe(404);
    // Bad bodies and tokens.
    expect(
      (await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`, undefined, {})).status,
    ).toBe(400);
    expect(
      (await app.post(`/v1/public/receptors/by-id/${s.receptor.id}/execute?t=cxs_nope`, undefined, { message: 'x' }))
        .status,
    ).toBe(401);
    expect((await app.get(`/v1/public/receptors/by-id/${s.receptor.id}`, undefined)).status).toBe(401);
  });

  it('a budget stops spending with 402; uploads need allow_files, a known type and a size limit', async () => {
    const ws = await buildWorkspace(app);
    const s = await sharedNeuron(ws, 'budgeted', { budget: { max_requests: 1 } });
    const url = `/v1/public/receptors/by-id/${s.receptor.id}/execute?${q(s.token)}`;
    const first = await app.post(url, undefined, { message: 'one' });
    expect(first.status).toBe(202);
    await settleJob(app, ws.key, String(first.body.job_id));
    const second = await app.post(url, undefined, { message: 'two' });
    expect(second.status).toBe(402);
    expect(second.body).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    const view = ShareView.parse(
      (await app.get(`/v1/receptors/${ws.workspaceId}/${s.receptor.id}/share`, ws.key)).body,
    );
    expect(view.budget).toMatchObject({ max_requests: 1, used_requests: 1 });
    expect(view.budget.used_tokens).toBeGreaterThan(0);

    const upload = (token: string, body: FormData) =>
      fetch(`${app.url}/v1/public/receptors/by-id/${s.receptor.id}/assets?${q(token)}`, { method: 'POST', body });
    const form = () => {
      const f = new FormData();
      f.append('file', new Blob(['order 42 is late'], { type: 'text/plain' }), 'note.txt');
      return f;
    };
    expect((await upload(s.token, form())).status).toBe(403);
    const files = await sharedNeuron(ws, 'files', { allow_files: true });
    const up = await fetch(`${app.url}/v1/public/receptors/by-id/${files.receptor.id}/assets?${q(files.token)}`, {
      method: 'POST',
      body: form(),
    });
    expect(up.status).toBe(201);
    const asset = ((await up.json()) as { asset: { id: string; size: number } }).asset;
    expect(asset.size).toBe(16);
    const exe = await app.post(`/v1/public/receptors/by-id/${files.receptor.id}/execute?${q(files.token)}`, undefined, {
      message: 'read this',
      asset_ids: [asset.id],
    });
    expect(exe.status).toBe(202);
    await settleJob(app, ws.key, String(exe.body.job_id));
    const bad = new FormData();
    bad.append('file', new Blob(['MZ'], { type: 'application/x-msdownload' }), 'x.exe');
    expect(
      (
        await fetch(`${app.url}/v1/public/receptors/by-id/${files.receptor.id}/assets?${q(files.token)}`, {
          method: 'POST',
          body: bad,
        })
      ).status,
    ).toBe(415);
    const big = new FormData();
    big.append('file', new Blob([Buffer.alloc(10 * 1024 * 1024 + 1, 97)], { type: 'text/plain' }), 'big.txt');
    expect(
      (
        await fetch(`${app.url}/v1/public/receptors/by-id/${files.receptor.id}/assets?${q(files.token)}`, {
          method: 'POST',
          body: big,
        })
      ).status,
    ).toBe(413);
    expect(
      (
        await app.post(`/v1/public/receptors/by-id/${files.receptor.id}/execute?${q(files.token)}`, undefined, {
          message: 'x',
          asset_ids: [randomUUID()],
        })
      ).status,
    ).toBe(400);
  });
});
