import { EventSource } from 'eventsource';
import { describe, expect, it } from 'vitest';
import { ReceptorList } from '../../src/receptors/schemas.js';
import { ShareView } from '../../src/shares/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

/*
 * The job stream read by a standard EventSource (the `eventsource` package implements the WHATWG
 * client browsers have), not by the project's own reader: after the terminal entry the server
 * closes, the client reconnects with Last-Event-ID, and that reconnection must end it (204).
 */
const { app, llm } = usePlatform();

/**
 * An EventSource on `url`, recording every connection it makes and every entry. `key` is sent as the
 * credential when given (a share link's token rides in the URL instead); `lastEventId` is sent on the
 * first connection, as a client that resumes after a page reload does.
 */
function follow(url: string, key?: string, lastEventId?: string) {
  let connections = 0;
  const statuses: number[] = [];
  const entries: { id: string; type: string }[] = [];
  const es = new EventSource(url, {
    fetch: async (input, init) => {
      connections++;
      const headers: Record<string, string> = { ...(init?.headers as Record<string, string>) };
      if (key) headers.authorization = `Bearer ${key}`;
      if (lastEventId && connections === 1) headers['last-event-id'] = lastEventId;
      const res = await fetch(input, { ...init, headers });
      statuses.push(res.status);
      return res;
    },
  });
  es.onmessage = (m) =>
    entries.push({ id: m.lastEventId, type: String((JSON.parse(m.data) as { type?: string }).type) });
  const closed = new Promise<void>((resolve) => {
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) resolve();
    };
  });
  return { es, closed, entries, statuses, connections: () => connections };
}

/** Waits for the EventSource to give up (at most `ms`), then long enough for a reconnect it would still make. */
async function settled(f: ReturnType<typeof follow>, ms = 20_000, grace = 4_000) {
  await Promise.race([
    f.closed,
    new Promise((_, reject) => setTimeout(() => reject(new Error('the EventSource is still reconnecting')), ms)),
  ]);
  await new Promise((r) => setTimeout(r, grace));
  const state = f.es.readyState;
  f.es.close();
  return state;
}

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

/** A neuron behind a receptor with a share link: the public job stream's setup. */
async function sharedNeuron(ws: Ws, name: string) {
  const n = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/gpt-4o-mini' },
  });
  expect(n.status).toBe(201);
  const r = ReceptorList.parse((await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body).receptors.find(
    (x) => x.executable_target.id === String(n.body.id),
  )!;
  const created = await app.post(`/v1/receptors/${ws.workspaceId}/${r.slug}/share`, ws.key, {});
  expect(created.status).toBe(201);
  const slug = (await app.services.workspaces.findWorkspace(ws.workspaceId))!.slug;
  return { receptor: r, token: ShareView.parse(created.body).token!, wsSlug: slug };
}

describe('job streams end cleanly for a standard EventSource', () => {
  it('a finished job: the entries once, one reconnection answered 204, then no more connections', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'es-reader',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    llm.setDefault(() => ({
      chunks: ['One', ' two'],
      delayMsPerChunk: 30,
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    }));
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'count', stream: true });
    const jobId = String(inv.body.job_id);
    const f = follow(`${app.url}/v1/jobs/${jobId}/stream`, ws.key);
    // Gives a client that would reconnect again the time to do it.
    expect(await settled(f)).toBe(EventSource.CLOSED);
    expect(f.connections()).toBe(2);
    expect(f.statuses).toEqual([200, 204]);
    const types = f.entries.map((e) => e.type);
    expect(types.filter((t) => t === 'complete')).toHaveLength(1);
    expect(types.at(-1)).toBe('complete');
    expect(new Set(f.entries.map((e) => e.id)).size).toBe(f.entries.length);
    await settleJob(app, ws.key, jobId);
  });

  it('resuming a finished job from its last cursor is 204 at once; from an earlier cursor, the rest and the end', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'es-resume',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    llm.setDefault(() => ({ chunks: ['a', 'b', 'c'], usage: { prompt_tokens: 3, completion_tokens: 3 } }));
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'letters' });
    const jobId = String(inv.body.job_id);
    await settleJob(app, ws.key, jobId);
    const all = app.deps.streams.range(app.services.jobs.streamKey(jobId));
    const entries = await all;
    const last = entries.at(-1)!.id;
    const ended = await app.get(`/v1/jobs/${jobId}/stream`, ws.key, { 'last-event-id': last });
    expect(ended.status).toBe(204);
    expect((await app.get(`/v1/jobs/${jobId}/stream?after=${last}`, ws.key)).status).toBe(204);
    const rest = await app.get(`/v1/jobs/${jobId}/stream?after=${entries.at(-2)!.id}`, ws.key);
    expect(rest.status).toBe(200);
    expect(rest.text).toContain('"type":"complete"');
  });
  it('an EventSource that resumes from the terminal entry gets 204 on its first request and never reconnects', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'es-closed',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    llm.setDefault(() => ({ chunks: ['done'], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'end' });
    const jobId = String(inv.body.job_id);
    await settleJob(app, ws.key, jobId);
    const terminal = (await app.deps.streams.range(app.services.jobs.streamKey(jobId))).at(-1)!;
    expect(terminal.data.type).toBe('complete');
    const started = Date.now();
    const f = follow(`${app.url}/v1/jobs/${jobId}/stream`, ws.key, terminal.id);
    await f.closed;
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await settled(f, 1_000, 3_000)).toBe(EventSource.CLOSED);
    expect(f.statuses).toEqual([204]);
    expect(f.connections()).toBe(1);
    expect(f.entries).toEqual([]);
  });

  it('the terminal entry is enough: resumed from it before the job record shows the end, still 204', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'es-race',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    llm.setDefault(() => ({
      chunks: ['slow', ' slow', ' slow'],
      delayMsPerChunk: 1_500,
      usage: { prompt_tokens: 1, completion_tokens: 3 },
    }));
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'wait' });
    const jobId = String(inv.body.job_id);
    // The moment between the terminal entry and the job record (docs/streams.md, rule 4), held open:
    // the stream gets its terminal entry while the job is still running.
    const key = app.services.jobs.streamKey(jobId);
    const id = await app.deps.streams.append(
      key,
      { type: 'error', error: 'cancelled', message: 'test' },
      { kind: 'terminal' },
    );
    expect(id).not.toBeNull();
    expect((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body.status).not.toMatch(/completed|failed/);
    const started = Date.now();
    const res = await app.get(`/v1/jobs/${jobId}/stream`, ws.key, { 'last-event-id': id! });
    expect(res.status).toBe(204);
    expect(Date.now() - started).toBeLessThan(2_000);
    await app.post(`/v1/jobs/${jobId}/cancel`, ws.key, {});
    await settleJob(app, ws.key, jobId);
  });

  it('the public job stream of a share link: a finished job replays once, then 204 and no more connections', async () => {
    const ws = await buildWorkspace(app);
    const s = await sharedNeuron(ws, 'es-public');
    llm.setDefault(() => ({
      chunks: ['Shared', ' reply'],
      delayMsPerChunk: 20,
      usage: { prompt_tokens: 2, completion_tokens: 2 },
    }));
    const token = `t=${encodeURIComponent(s.token)}`;
    const ex = await app.post(`/v1/public/receptors/${s.wsSlug}/${s.receptor.slug}/execute?${token}`, undefined, {
      message: 'hello',
    });
    expect(ex.status).toBe(202);
    const jobId = String(ex.body.job_id);
    await settleJob(app, ws.key, jobId);
    const url = `${app.url}/v1/public/jobs/${jobId}/stream?${token}&receptor_id=${s.receptor.id}`;
    const f = follow(url);
    expect(await settled(f)).toBe(EventSource.CLOSED);
    expect(f.statuses).toEqual([200, 204]);
    expect(f.connections()).toBe(2);
    expect(f.entries.map((e) => e.type).at(-1)).toBe('complete');
    expect(f.entries.filter((e) => e.type === 'complete')).toHaveLength(1);

    // Resumed from its terminal entry: 204 at once, no second request.
    const again = follow(url, undefined, f.entries.at(-1)!.id);
    expect(await settled(again, 2_000, 3_000)).toBe(EventSource.CLOSED);
    expect(again.statuses).toEqual([204]);
    expect(again.connections()).toBe(1);
  });
});
