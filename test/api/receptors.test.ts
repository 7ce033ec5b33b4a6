import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { JobList } from '../../src/jobs/schemas.js';
import { Receptor, ReceptorList } from '../../src/receptors/schemas.js';
import { TraceList } from '../../src/traces/schemas.js';
import { internalSecret, signBody } from '../../src/receptors/stimuli.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

const { app, sim } = useSimPlatform({ firstTokenMs: [20, 60], interTokenMs: 5, tokens: [3, 6] });
const MODEL = 'openai/sim';
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const scheduled: string[] = [];
afterAll(async () => {
  // Schedules live in the shared Temporal server: none outlives this file.
  for (const id of scheduled) await app.services.schedules.remove(id).catch(() => undefined);
});

async function neuron(ws: Ws, name: string, extra: Record<string, unknown> = {}) {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: MODEL },
    ...extra,
  });
  expect(r.status).toBe(201);
  return r.body as { id: string; name: string };
}
async function receptorOf(ws: Ws, targetId: string) {
  const list = ReceptorList.parse((await app.get(`/v1/receptors?limit=200`, ws.key, ws.brainHeaders)).body);
  const r = list.receptors.find((x) => x.executable_target.id === targetId);
  expect(r).toBeDefined();
  return r!;
}
async function jobsOf(ws: Ws, receptorId: string) {
  return JobList.parse((await app.get(`/v1/jobs?receptor_id=${receptorId}&limit=100`, ws.key)).body).jobs;
}
async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await sleep(200);
  }
}
async function subscribeSchedule(ws: Ws, body: Record<string, unknown>, cred = ws.key) {
  const r = await app.post('/v1/receptors/subscribe', cred, { template: 'schedule', brain_id: ws.brainId, ...body });
  if (r.status === 201) scheduled.push(String(r.body.id));
  return r;
}
const signed = (body: Record<string, unknown>, secret = internalSecret(app.config)) => {
  const raw = JSON.stringify(body);
  return { raw, signature: signBody(secret, raw) };
};
async function postRaw(path: string, raw: string, headers: Record<string, string>) {
  const res = await fetch(`${app.url}${path}`, {
    method: 'POST',
    body: raw,
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('receptor reads', () => {
  it('a neuron and a pathway each get a receptor; list filters, ids, reads by slug and id, catalog read', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'Reader Bot');
    const p = await app.post('/v1/pathways', ws.key, { name: 'flow one' }, ws.brainHeaders);
    expect(p.status).toBe(201);
    const rn = await receptorOf(ws, n.id);
    const rp = await receptorOf(ws, String(p.body.id));
    expect(rn).toMatchObject({
      slug: 'reader-bot',
      is_active: true,
      scope: 'brain',
      target_type: 'neuron',
      active_channels: ['http'],
    });
    expect(rp).toMatchObject({ slug: 'flow-one', is_active: true, target_type: 'pathway' });

    const neuronsOnly = ReceptorList.parse(
      (await app.get('/v1/receptors?target_type=neuron', ws.key, ws.brainHeaders)).body,
    );
    expect(neuronsOnly.receptors.map((r) => r.id)).toEqual([rn.id]);
    const byIds = ReceptorList.parse(
      (await app.get(`/v1/receptors?ids=${rp.id},${randomUUID()}`, ws.key, ws.brainHeaders)).body,
    );
    expect(byIds).toMatchObject({ total: 1, limit: 20, offset: 0 });
    expect(byIds.receptors[0].id).toBe(rp.id);
    const tooMany = Array.from({ length: 101 }, () => randomUUID()).join(',');
    expect((await app.get(`/v1/receptors?ids=${tooMany}`, ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/receptors?ids=abc', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/receptors', ws.key)).status).toBe(400); // brain required

    const workspace = await app.services.workspaces.findWorkspace(ws.workspaceId);
    for (const seg of [workspace!.slug, ws.workspaceId]) {
      for (const ref of ['reader-bot', rn.id]) {
        const one = await app.get(`/v1/receptors/${seg}/${ref}`, ws.key);
        expect(one.status).toBe(200);
        expect(Receptor.parse(one.body).id).toBe(rn.id);
      }
    }
    expect((await app.get(`/v1/receptors/${workspace!.slug}/nope`, ws.key)).status).toBe(404);
    const cat = await app.get(`/v1/resources/receptors/${rn.id}`, ws.key);
    expect(cat.status).toBe(200);
    expect(Receptor.parse(cat.body.receptor).id).toBe(rn.id);

    // Another workspace: every route answers 404.
    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/receptors/${other.workspaceId}/${rn.id}`, other.key)).status).toBe(404);
    expect((await app.get(`/v1/receptors/${ws.workspaceId}/${rn.id}`, other.key)).status).toBe(404);
    expect((await app.get(`/v1/resources/receptors/${rn.id}`, other.key)).status).toBe(404);
    expect((await app.post(`/v1/receptors/${rn.id}/fire`, other.key, { message: 'x' })).status).toBe(404);
    expect((await app.patch(`/v1/receptors/${ws.workspaceId}/reader-bot`, other.key, { config: {} })).status).toBe(404);
  });

  it('PATCH: is_active changes the target; stimulus-only fields are refused on an http receptor; bad bodies are 400', async () => {
    const ws = await buildWorkspace(app);
    const p = await app.post('/v1/pathways', ws.key, { name: 'toggle flow' }, ws.brainHeaders);
    const rp = await receptorOf(ws, String(p.body.id));
    const off = await app.patch(`/v1/receptors/${ws.workspaceId}/${rp.slug}`, ws.key, {
      is_active: false,
      config: { conditions: ['x'] },
    });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ is_active: false, config: { conditions: ['x'] } });
    expect((await app.get(`/v1/pathways/${String(p.body.id)}`, ws.key, ws.brainHeaders)).body).toMatchObject({
      is_active: false,
    });
    const fire = await app.post(`/v1/receptors/${rp.id}/fire`, ws.key, {});
    expect(fire.status).toBe(400);
    expect(String(fire.body.message)).toMatch(/inactive/);
    // and back on through the pathway itself: the receptor follows
    await app.put(`/v1/pathways/${String(p.body.id)}`, ws.key, { is_active: true }, ws.brainHeaders);
    expect((await app.get(`/v1/receptors/${ws.workspaceId}/${rp.id}`, ws.key)).body).toMatchObject({ is_active: true });

    expect(
      (
        await app.patch(`/v1/receptors/${ws.workspaceId}/${rp.slug}`, ws.key, {
          source_config: { stimulus_keys: ['vault.asset.created'] },
        })
      ).status,
    ).toBe(400);
    expect(
      (await app.patch(`/v1/receptors/${ws.workspaceId}/${rp.slug}`, ws.key, { active_channels: ['pigeon'] })).status,
    ).toBe(400);
    expect((await app.patch(`/v1/receptors/${ws.workspaceId}/${rp.slug}`, ws.key, { bogus: 1 })).status).toBe(400);
    const bad = await app.patch(`/v1/receptors/${ws.workspaceId}/${rp.slug}`, ws.key, {
      active_channels: ['http', 'stimulus'],
      source_config: { stimulus_keys: ['vault.nothing'] },
    });
    expect(bad.status).toBe(400);
    const tz = await app.patch(`/v1/receptors/${ws.workspaceId}/${rp.slug}`, ws.key, {
      active_channels: ['cron'],
      source_config: { activation: 'schedule', timing: { cron: '0 9 * * *', timezone: 'Mars/Olympus' } },
    });
    expect(tz.status).toBe(400);
  });
});

describe('fire', () => {
  it('runs the neuron as a child of receptorFire; job and trace list under the receptor', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'firee');
    const r = await receptorOf(ws, n.id);
    const res = await app.post(`/v1/receptors/${r.id}/fire`, ws.key, {
      invoke: { message: 'hello from a trigger' },
      stream: true,
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'pending', receptor_id: r.id });
    const job = await settleJob(app, ws.key, String(res.body.job_id));
    expect(job).toMatchObject({ status: 'completed', receptor_id: r.id, neuron_id: n.id, kind: 'neuron' });
    expect((job.result as { text: string }).text.length).toBeGreaterThan(0);
    expect(sim.said.at(-1)?.user).toBe('hello from a trigger');
    expect((await jobsOf(ws, r.id)).map((j) => j.job_id)).toEqual([job.job_id]);
    const traces = TraceList.parse((await app.get(`/v1/traces?receptor_id=${r.id}`, ws.key)).body);
    expect(traces.traces.map((t) => t.trace_id)).toEqual([job.trace_id]);
    expect(traces.traces[0].synapse_id).toBe(r.id);
    const msgs = (await app.get<{ engrams: { source_type: string }[] }>(`/v1/traces/${job.trace_id}/messages`, ws.key))
      .body.engrams;
    expect(msgs.map((m) => m.source_type)).toEqual(['user', 'neuron']);
    // The firing workflow is in Temporal, with the child run under the job id.
    const fire = await app.services.jobs.repoFind(job.job_id);
    expect(fire?.receptorId).toBe(r.id);
    const handle = app.deps.temporal.client.workflow.getHandle(`fire-${job.job_id}`);
    expect(await handle.result()).toMatchObject({ jobId: job.job_id, status: 'completed' });
    expect((await handle.describe()).type).toBe('receptorFire');
  });

  it('takes the receptor by slug as by id (as neurons take their slug); another workspace gets a 404', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const n = await neuron(ws, 'slug-firee');
    const r = await receptorOf(ws, n.id);
    expect(r.slug).toBe('slug-firee');
    const res = await app.post(`/v1/receptors/${r.slug}/fire`, ws.key, { message: 'by slug' });
    expect(res.status, res.text).toBe(202);
    // The answer names the receptor by its id, whichever way it was named.
    expect(res.body).toMatchObject({ status: 'pending', receptor_id: r.id });
    expect(await settleJob(app, ws.key, String(res.body.job_id))).toMatchObject({
      status: 'completed',
      receptor_id: r.id,
      neuron_id: n.id,
    });
    expect((await app.post(`/v1/receptors/${r.slug}/fire`, other.key, { message: 'x' })).status).toBe(404);
    expect((await app.post('/v1/receptors/no-such-receptor/fire', ws.key, { message: 'x' })).status).toBe(404);
    // PATCH takes the id as its GET and DELETE do (and the slug, as before).
    const patched = await app.patch(`/v1/receptors/${ws.workspaceId}/${r.id}`, ws.key, { config: { by: 'id' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ id: r.id, config: { by: 'id' } });
  });

  it('top-level fields are the payload; a pathway target runs; bad task options and inactive targets are 400', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'payload');
    const r = await receptorOf(ws, n.id);
    const top = await app.post(`/v1/receptors/${r.id}/fire`, ws.key, { order: 42, data: { a: 1 } });
    expect(top.status).toBe(202);
    await settleJob(app, ws.key, String(top.body.job_id));
    expect(sim.said.at(-1)?.user).toBe('{"order":42}');
    expect(
      (await app.post(`/v1/receptors/${r.id}/fire`, ws.key, { message: 'x', neuron_task_options: { persist: true } }))
        .status,
    ).toBe(400);
    expect((await app.post(`/v1/receptors/${r.id}/fire`, ws.key, { invoke: { message: 'x' }, extra: 1 })).status).toBe(
      400,
    );
    expect((await app.post(`/v1/receptors/${r.id}/fire`, ws.key, { message: 'x', trace_id: 'nope' })).status).toBe(400);
    expect((await app.post(`/v1/receptors/${randomUUID()}/fire`, ws.key, {})).status).toBe(404);
    await app.put(`/v1/neurons/${n.id}`, ws.key, { is_active: false });
    const inactive = await app.post(`/v1/receptors/${r.id}/fire`, ws.key, { message: 'x' });
    expect(inactive.status).toBe(400);

    const graph = {
      nodes: [
        { id: 'a', type: 'input', data: {} },
        { id: 'b', type: 'output', data: {} },
      ],
      edges: [{ source: 'a', target: 'b' }],
    };
    const p = await app.post('/v1/pathways', ws.key, { name: 'fired flow', pathway_graph: graph }, ws.brainHeaders);
    expect(p.status).toBe(201);
    const rp = await receptorOf(ws, String(p.body.id));
    const fp = await app.post(`/v1/receptors/${rp.id}/fire`, ws.key, { data: { x: 1 }, invoke: { y: 2 } });
    expect(fp.status).toBe(202);
    const pj = await settleJob(app, ws.key, String(fp.body.job_id));
    expect(pj).toMatchObject({
      status: 'completed',
      kind: 'pathway',
      receptor_id: rp.id,
      pathway_id: String(p.body.id),
    });
  });

  it("a member may fire; changing a workspace-scoped neuron's receptor needs workspace_admin", async () => {
    const ws = await buildWorkspace(app);
    const member = await ws.jwt([]);
    const n = await neuron(ws, 'shared one', { scope: 'workspace' });
    const r = await receptorOf(ws, n.id);
    const fired = await app.post(`/v1/receptors/${r.id}/fire`, member, { message: 'from a member' });
    expect(fired.status).toBe(202);
    await settleJob(app, ws.key, String(fired.body.job_id));
    const patch = await app.patch(`/v1/receptors/${ws.workspaceId}/${r.slug}`, member, { config: { a: 1 } });
    expect(patch.status).toBe(403);
    expect((await app.patch(`/v1/receptors/${ws.workspaceId}/${r.slug}`, ws.key, { config: { a: 1 } })).status).toBe(
      200,
    );
  });
});

describe('schedules on Temporal Schedules', () => {
  it('a cron in a non-UTC time zone previews its next fires across a DST change (the engine does the zone)', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'new-york');
    const r = await receptorOf(ws, n.id);
    // Twice a year, 09:00 in New York: any two consecutive fires straddle a DST change.
    const res = await app.patch(`/v1/receptors/${ws.workspaceId}/${r.slug}`, ws.key, {
      active_channels: ['http', 'cron'],
      source_config: { activation: 'schedule', timing: { cron: '0 9 1 1,7 *', timezone: 'America/New_York' } },
    });
    expect(res.status).toBe(200);
    scheduled.push(r.id);
    const view = Receptor.parse((await app.get(`/v1/receptors/${ws.workspaceId}/${r.slug}?preview=4`, ws.key)).body);
    expect(view.schedule).toMatchObject({
      state: 'active',
      timezone: 'America/New_York',
      schedule_id: `receptor-${r.id}`,
    });
    const times = view.schedule!.next_fire_times.map((t) => new Date(t));
    expect(times).toHaveLength(4);
    const local = new Intl.DateTimeFormat('en-US', {
      timeZone: 'America/New_York',
      hour: 'numeric',
      hourCycle: 'h23',
      day: 'numeric',
    });
    for (const t of times) expect(Number(local.formatToParts(t).find((p) => p.type === 'hour')!.value)).toBe(9);
    const utcHours = new Set(times.map((t) => t.getUTCHours()));
    expect([...utcHours].sort()).toEqual([13, 14]); // EDT (UTC-4) in July, EST (UTC-5) in January
    const described = await app.services.schedules.describe(r.id);
    expect(described?.spec.timezone).toBe('America/New_York');
    expect(described?.action.workflowType).toBe('receptorFire');
  });

  it('a short interval fires with skip overlap, never twice at once; pause stops it and unpause + trigger resume it', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'ticker');
    sim.configure({ firstTokenMs: 2500 });
    try {
      const s = await subscribeSchedule(ws, {
        name: 'every second',
        target: { kind: 'neuron', id: n.id },
        timing: { interval: 1 },
        payload: { message: 'tick' },
      });
      expect(s.status).toBe(201);
      const id = String(s.body.id);
      const jobs = await until(
        () => jobsOf(ws, id),
        (j) => j.filter((x) => x.status === 'completed').length >= 2,
        30_000,
      );
      expect(jobs.filter((x) => x.status === 'completed').length).toBeGreaterThanOrEqual(2);
      // No two runs of this receptor overlapped in time.
      const spans = jobs
        .filter((j) => j.processed_at && j.finished_at)
        .map((j) => [Date.parse(j.processed_at!), Date.parse(j.finished_at!)])
        .sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < spans.length; i++) expect(spans[i][0]).toBeGreaterThanOrEqual(spans[i - 1][1] - 50);
      const view = Receptor.parse((await app.get(`/v1/receptors/${ws.workspaceId}/${id}`, ws.key)).body);
      expect(view.schedule!.skipped_overlap).toBeGreaterThan(0);

      const paused = await app.post(`/v1/receptors/${ws.workspaceId}/${id}/schedule/pause`, ws.key, {
        note: 'quiet hours',
      });
      expect(paused.status).toBe(200);
      expect(paused.body.schedule).toMatchObject({ state: 'paused', note: 'quiet hours' });
      // A fire Temporal started just before the pause may not have stored its job yet: wait until the
      // jobs are all ended and their count holds over two reads 2 s apart.
      const ended = (j: Awaited<ReturnType<typeof jobsOf>>) =>
        j.every((x) => x.status === 'completed' || x.status === 'failed');
      const settled = await until(
        async () => {
          const first = await jobsOf(ws, id);
          await sleep(2000);
          return { first, second: await jobsOf(ws, id) };
        },
        ({ first, second }) => ended(first) && ended(second) && first.length === second.length,
        30_000,
      );
      const before = settled.second.length;
      await sleep(3000);
      expect((await jobsOf(ws, id)).length).toBe(before);

      sim.configure({ firstTokenMs: 20 });
      // Trigger-now works on a paused schedule: exactly one more run.
      const trig = await app.post(`/v1/receptors/${ws.workspaceId}/${id}/schedule/trigger`, ws.key, {});
      expect(trig.status).toBe(200);
      await until(
        () => jobsOf(ws, id),
        (j) => j.length > before,
        15_000,
      );
      await sleep(1500);
      expect((await jobsOf(ws, id)).length).toBe(before + 1);
      const un = await app.post(`/v1/receptors/${ws.workspaceId}/${id}/schedule/unpause`, ws.key, { note: 'back' });
      expect(un.body.schedule).toMatchObject({ state: 'active', note: 'back' });
      const resumed = await until(
        () => jobsOf(ws, id),
        (j) => j.length >= before + 2,
        15_000,
      );
      expect(resumed.length).toBeGreaterThanOrEqual(before + 2);
      await app.post(`/v1/receptors/${ws.workspaceId}/${id}/schedule/pause`, ws.key, {});
    } finally {
      sim.configure({ firstTokenMs: [20, 60] });
    }
  });

  it('backfill starts the runs of a past range; delete removes the schedule; the reconciler repairs drift', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'hourly');
    const s = await subscribeSchedule(ws, {
      name: 'hourly',
      target: { kind: 'neuron', id: n.id },
      timing: { cron: '0 * * * *' },
    });
    const id = String(s.body.id);
    const now = Date.now();
    const end = new Date(Math.floor(now / 3600_000) * 3600_000 - 60_000); // just before the last full hour
    const start = new Date(end.getTime() - 3 * 3600_000); // three hour marks inside
    const bf = await app.post(`/v1/receptors/${ws.workspaceId}/${id}/schedule/backfill`, ws.key, {
      start_at: start.toISOString(),
      end_at: end.toISOString(),
    });
    expect(bf.status).toBe(200);
    expect(bf.body.backfill).toMatchObject({ runs: 3 });
    const jobs = await until(
      () => jobsOf(ws, id),
      (j) => j.filter((x) => x.status === 'completed').length >= 3,
      30_000,
    );
    expect(jobs.filter((x) => x.status === 'completed')).toHaveLength(3);
    expect(
      (
        await app.post(`/v1/receptors/${ws.workspaceId}/${id}/schedule/backfill`, ws.key, {
          start_at: end.toISOString(),
          end_at: start.toISOString(),
        })
      ).status,
    ).toBe(400);

    // Deleted behind its back: the reconciler brings it back.
    await app.deps.temporal.client.schedule.getHandle(`receptor-${id}`).delete();
    expect(await app.services.schedules.describe(id)).toBeNull();
    const repaired = await app.services.receptors.reconcileSchedules();
    expect(repaired.created).toContain(`receptor-${id}`);
    expect(await app.services.schedules.describe(id)).not.toBeNull();

    // A schedule whose receptor is gone: removed.
    const orphan = await subscribeSchedule(ws, {
      name: 'orphan',
      target: { kind: 'neuron', id: n.id },
      timing: { interval: 3600 },
    });
    await app.deps.db.collection('receptors').deleteOne({ _id: String(orphan.body.id) } as never);
    const cleaned = await app.services.receptors.reconcileSchedules();
    expect(cleaned.removed).toContain(`receptor-${String(orphan.body.id)}`);
    expect(await app.services.schedules.describe(String(orphan.body.id))).toBeNull();

    const del = await app.del(`/v1/receptors/${ws.workspaceId}/${id}`, ws.key);
    expect(del.status).toBe(200);
    expect(await app.services.schedules.describe(id)).toBeNull();
    expect((await app.get(`/v1/receptors/${ws.workspaceId}/${id}`, ws.key)).status).toBe(404);
    // A neuron's own receptor goes with the neuron, not on its own.
    const own = await receptorOf(ws, n.id);
    expect((await app.del(`/v1/receptors/${ws.workspaceId}/${own.id}`, ws.key)).status).toBe(400);
  });

  it('a bad cron is a 400 and stores nothing; system jobs need workspace_admin and run their maintenance key', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'cronless');
    const bad = await subscribeSchedule(ws, {
      name: 'bad',
      target: { kind: 'neuron', id: n.id },
      timing: { cron: 'every tuesday-ish' },
    });
    expect(bad.status).toBe(400);
    expect(ReceptorList.parse((await app.get('/v1/receptors', ws.key, ws.brainHeaders)).body).total).toBe(1);

    const member = await ws.jwt([]);
    const target = { kind: 'system_job', job: 'maintenance.usage_report' };
    expect(
      (
        await subscribeSchedule(
          ws,
          { name: 'report', target, timing: { cron: '0 6 * * *', timezone: 'Europe/Berlin' } },
          member,
        )
      ).status,
    ).toBe(403);
    const s = await subscribeSchedule(ws, {
      name: 'report',
      target,
      timing: { cron: '0 6 * * *', timezone: 'Europe/Berlin' },
    });
    expect(s.status).toBe(201);
    const id = String(s.body.id);
    await app.post(`/v1/receptors/${ws.workspaceId}/${id}/schedule/trigger`, ws.key, {});
    const [job] = await until(
      () => jobsOf(ws, id),
      (j) => j.length === 1 && j[0].status === 'completed',
      20_000,
    );
    expect(job).toMatchObject({ status: 'completed', kind: 'receptor' });
    expect(job.result).toMatchObject({ key: 'maintenance.usage_report' });
  });
});

describe('stimuli', () => {
  it('the catalog lists prefixed keys; schedulable=true filters', async () => {
    const ws = await buildWorkspace(app);
    const all = (
      await app.get<{ stimuli: { key: string; schedulable: boolean; description: string }[] }>(
        '/v1/stimuli/catalog',
        ws.key,
      )
    ).body.stimuli;
    expect(all.every((s) => /^(vault|plasticity|maintenance)\./.test(s.key) && s.description)).toBe(true);
    expect(all.some((s) => s.key === 'vault.asset.created')).toBe(true);
    const sched = (
      await app.get<{ stimuli: { key: string; schedulable: boolean }[] }>(
        '/v1/stimuli/catalog?schedulable=true',
        ws.key,
      )
    ).body.stimuli;
    expect(sched.length).toBeGreaterThan(0);
    expect(sched.every((s) => s.schedulable && s.key.startsWith('maintenance.'))).toBe(true);
  });

  it('an event fires two subscribed receptors once each; the same event again fires nothing; only signed requests get in', async () => {
    const ws = await buildWorkspace(app);
    const a = await neuron(ws, 'listener a');
    const b = await neuron(ws, 'listener b');
    const s1 = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'stimulus',
      name: 'on asset',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: a.id },
      stimulus_keys: ['vault.asset.created'],
    });
    const s2 = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'stimulus',
      name: 'on vault',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: b.id },
      stimulus_keys: ['vault.*'],
    });
    expect([s1.status, s2.status]).toEqual([201, 201]);
    const other = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'stimulus',
      name: 'on memory',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: a.id },
      stimulus_keys: ['vault.memory.deleted'],
    });
    expect(other.status).toBe(201);
    expect(
      (
        await app.post('/v1/receptors/subscribe', ws.key, {
          template: 'stimulus',
          name: 'x',
          brain_id: ws.brainId,
          target: { kind: 'neuron', id: a.id },
          stimulus_keys: ['not.a.key'],
        })
      ).status,
    ).toBe(400);

    const event = {
      workspace_id: ws.workspaceId,
      key: 'vault.asset.created',
      event_id: randomUUID(),
      payload: { resource_id: randomUUID(), resource_type: 'asset' },
    };
    const { raw, signature } = signed(event);
    const first = await postRaw('/v1/internal/stimuli', raw, { 'x-cortex-signature': signature });
    expect(first.status).toBe(200);
    const fired = first.body.fired as { receptor_id: string; job_id: string; duplicate: boolean }[];
    expect(fired.map((f) => f.receptor_id).sort()).toEqual([String(s1.body.id), String(s2.body.id)].sort());
    expect(fired.every((f) => !f.duplicate)).toBe(true);
    const again = await postRaw('/v1/internal/stimuli', raw, {
      'x-cortex-signature': signBody(internalSecret(app.config), raw),
    });
    expect((again.body.fired as { duplicate: boolean }[]).every((f) => f.duplicate)).toBe(true);
    for (const f of fired) expect((await settleJob(app, ws.key, f.job_id)).status).toBe('completed');
    for (const id of [String(s1.body.id), String(s2.body.id)]) expect(await jobsOf(ws, id)).toHaveLength(1);
    expect(await jobsOf(ws, String(other.body.id))).toHaveLength(0);

    // Never an API key, never unsigned, never a wrong or stale signature.
    expect((await postRaw('/v1/internal/stimuli', raw, { authorization: `Bearer ${ws.key}` })).status).toBe(401);
    expect(
      (await postRaw('/v1/internal/stimuli', raw, { 'x-cortex-signature': signBody('wrong-secret', raw) })).status,
    ).toBe(401);
    expect(
      (
        await postRaw('/v1/internal/stimuli', raw, {
          'x-cortex-signature': signBody(internalSecret(app.config), raw, Math.floor(Date.now() / 1000) - 3600),
        })
      ).status,
    ).toBe(401);
  });
});

describe('platform events and action plans', () => {
  it("a person's answer publishes plasticity.intervention.answered; an action plan is proposed, or executed with auto_execute", async () => {
    const ws = await buildWorkspace(app);
    const graph = {
      nodes: [
        { id: 's', type: 'start' },
        { id: 'h', type: 'human', data: { title: 'Ship it?' } },
        { id: 'o', type: 'output', data: { value: '"shipped"' } },
      ],
      edges: [
        { source: 's', target: 'h' },
        { source: 'h', target: 'o', data: { condition: 'approve' } },
      ],
    };
    const approval = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'approval', pathway_graph: graph },
      ws.brainHeaders,
    );
    expect(approval.status).toBe(201);
    const plan = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'plan',
        pathway_graph: {
          nodes: [
            { id: 'a', type: 'input' },
            { id: 'b', type: 'output' },
          ],
          edges: [{ source: 'a', target: 'b' }],
        },
      },
      ws.brainHeaders,
    );
    const proposed = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'stimulus',
      name: 'learn from answers',
      brain_id: ws.brainId,
      target: { kind: 'plasticity_pass', id: String(plan.body.id) },
      stimulus_keys: ['plasticity.intervention.answered'],
    });
    expect(proposed.status).toBe(201);
    expect(proposed.body.executable_target).toMatchObject({ kind: 'action_plan', auto_execute: false });
    const auto = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'stimulus',
      name: 'act on answers',
      brain_id: ws.brainId,
      target: { kind: 'action_plan', id: String(plan.body.id), auto_execute: true },
      stimulus_keys: ['plasticity.*'],
    });
    expect(auto.status).toBe(201);

    const run = await app.post(`/v1/pathways/${String(approval.body.id)}/execute`, ws.key, {}, ws.brainHeaders);
    const waiting = await until(
      () =>
        app.get<{ status: string; waitingFor?: { interventionId: string } }>(
          `/v1/jobs/${String(run.body.job_id)}/status`,
          ws.key,
        ),
      (r) => r.body.status === 'waiting',
    );
    const answered = await app.post(`/v1/interventions/${waiting.body.waitingFor!.interventionId}/respond`, ws.key, {
      action: 'approve',
    });
    expect(answered.status).toBe(200);
    expect((await settleJob(app, ws.key, String(run.body.job_id))).status).toBe('completed');

    const [pj] = await until(
      () => jobsOf(ws, String(proposed.body.id)),
      (j) => j.length === 1 && j[0].status === 'completed',
    );
    expect(pj.result).toMatchObject({
      status: 'proposed',
      pathway_id: String(plan.body.id),
      execute_with: { path: '/v1/jobs' },
    });
    expect(
      (pj.result as { execute_with: { body: { input: Record<string, unknown> } } }).execute_with.body.input,
    ).toMatchObject({ stimulus: 'plasticity.intervention.answered', action: 'approve' });
    const [aj] = await until(
      () => jobsOf(ws, String(auto.body.id)).then((j) => j.filter((x) => x.kind === 'receptor')),
      (j) => j.length === 1 && j[0].status === 'completed',
    );
    expect(aj.result).toMatchObject({ status: 'executed' });
    const exec = await settleJob(app, ws.key, String((aj.result as { execution_job_id: string }).execution_job_id));
    expect(exec).toMatchObject({ status: 'completed', kind: 'pathway', parent_job_id: aj.job_id });
  });
});

describe('channel bindings and the webhook ingress', () => {
  it("binds a conversation (JWT only, channel must be active, unique), and a signed message fires the receptor on the binding's thread once per event", async () => {
    const ws = await buildWorkspace(app);
    const jwt = await ws.jwt();
    const n = await neuron(ws, 'chatty');
    const r = await receptorOf(ws, n.id);
    const externalId = `C-${randomUUID()}`;
    const body = { receptor_id: r.id, channel: 'slack', external_id: externalId };
    expect((await app.post('/v1/receptor-channel-bindings', ws.key, body)).status).toBe(403);
    expect((await app.post('/v1/receptor-channel-bindings', jwt, body)).status).toBe(400); // slack not active yet
    await app.patch(`/v1/receptors/${ws.workspaceId}/${r.slug}`, ws.key, { active_channels: ['http', 'slack'] });
    const created = await app.post('/v1/receptor-channel-bindings', jwt, body);
    expect(created.status).toBe(201);
    const secret = String(created.body.webhook_secret);
    expect(secret.length).toBeGreaterThan(20);
    expect((await app.post('/v1/receptor-channel-bindings', jwt, body)).status).toBe(409);
    const listed = await app.get<{ bindings: Record<string, unknown>[] }>(
      `/v1/receptor-channel-bindings?receptor_id=${r.id}`,
      jwt,
    );
    expect(listed.body.bindings).toHaveLength(1);
    expect(listed.body.bindings[0].webhook_secret).toBeUndefined();

    const msg = { external_id: externalId, event_id: 'evt-1', message: 'hi from slack', sender: { id: 'U1' } };
    const raw = JSON.stringify(msg);
    const first = await postRaw('/v1/chat-webhooks/slack', raw, { 'x-cortex-signature': signBody(secret, raw) });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ duplicate: false, trace_id: created.body.trace_id });
    const dup = await postRaw('/v1/chat-webhooks/slack', raw, { 'x-cortex-signature': signBody(secret, raw) });
    expect(dup.body).toMatchObject({ duplicate: true, job_id: first.body.job_id });
    expect((await settleJob(app, ws.key, String(first.body.job_id))).status).toBe('completed');
    const second = JSON.stringify({ ...msg, event_id: 'evt-2', message: 'and again' });
    const next = await postRaw('/v1/chat-webhooks/slack', second, { 'x-cortex-signature': signBody(secret, second) });
    await settleJob(app, ws.key, String(next.body.job_id));
    const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${String(created.body.trace_id)}/messages`, ws.key))
      .body.engrams;
    expect(msgs).toHaveLength(4); // one thread: two messages, two replies

    expect(
      (await postRaw('/v1/chat-webhooks/slack', raw, { 'x-cortex-signature': signBody('not-the-secret', raw) })).status,
    ).toBe(401);
    const rotated = await app.patch(`/v1/receptor-channel-bindings/${String(created.body.id)}`, jwt, {
      rotate_secret: true,
    });
    expect(rotated.body.webhook_secret).not.toBe(secret);
    const third = JSON.stringify({ ...msg, event_id: 'evt-3' });
    expect(
      (await postRaw('/v1/chat-webhooks/slack', third, { 'x-cortex-signature': signBody(secret, third) })).status,
    ).toBe(401);
    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/receptor-channel-bindings/${String(created.body.id)}`, await other.jwt())).status).toBe(
      404,
    );
    expect((await app.del(`/v1/receptor-channel-bindings?id=${String(created.body.id)}`, jwt)).status).toBe(200);
    expect((await app.get(`/v1/receptor-channel-bindings/${String(created.body.id)}`, jwt)).status).toBe(404);
  });
});
