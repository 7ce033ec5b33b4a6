import { EventSource } from 'eventsource';
import { describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

/*
 * The job stream read by a standard EventSource (the `eventsource` package implements the WHATWG
 * client browsers have), not by the project's own reader: after the terminal entry the server
 * closes, the client reconnects with Last-Event-ID, and that reconnection must end it (204).
 */
const { app, llm } = usePlatform();

/** An EventSource on `url` with the credential, recording every connection it makes and every entry. */
function follow(url: string, key: string) {
  let connections = 0;
  const statuses: number[] = [];
  const entries: { id: string; type: string }[] = [];
  const es = new EventSource(url, {
    fetch: async (input, init) => {
      connections++;
      const res = await fetch(input, {
        ...init,
        headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}` },
      });
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
    await Promise.race([
      f.closed,
      new Promise((_, reject) => setTimeout(() => reject(new Error('the EventSource is still reconnecting')), 20_000)),
    ]);
    // Give a client that would reconnect again the time to do it.
    await new Promise((r) => setTimeout(r, 4_000));
    f.es.close();
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
});
