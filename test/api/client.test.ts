import { describe, expect, it } from 'vitest';
import {
  createCortexClient,
  CortexApiError,
  type JobStreamData,
  type StreamEntry,
} from '../../clients/typescript/src/index.js';
import { buildWorkspace } from '../support/app.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The TypeScript client (clients/typescript) against the real platform and the provider simulator:
 * typed calls, job polling, and the job stream helper through a connection cut (resume from the last
 * entry id) and a retried model turn (`reset`), ending with exactly the stored reply.
 */
const { app, sim } = useSimPlatform({ tokens: 12, interTokenMs: 40, firstTokenMs: 50 });

/**
 * A fetch that cuts the first job-stream connection once `cutAfter` entries have arrived (the
 * reader sees the body fail, as when a proxy or the network drops it) and records every stream request.
 */
function cuttingFetch(cutAfter: number) {
  const requests: { url: string; lastEventId: string | null }[] = [];
  let cut = false;
  const f = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    const res = await fetch(input, init);
    if (!url.includes('/stream')) return res;
    requests.push({ url, lastEventId: new Headers(init?.headers).get('last-event-id') });
    if (cut || !res.body) return res;
    cut = true;
    const upstream = res.body.getReader();
    let seen = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await upstream.read();
        if (done) return controller.close();
        controller.enqueue(value);
        seen += (new TextDecoder().decode(value).match(/^id: /gm) ?? []).length;
        if (seen >= cutAfter) {
          await upstream.cancel();
          controller.error(new TypeError('terminated: connection cut by the test'));
        }
      },
      cancel: () => upstream.cancel(),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  }) as typeof fetch;
  return { fetch: f, requests };
}

describe('the TypeScript client', () => {
  it('follows a job stream through a cut and a retried turn, and shows exactly the stored reply', async () => {
    const ws = await buildWorkspace(app);
    const cutter = cuttingFetch(4);
    const client = createCortexClient({ baseUrl: app.url, apiKey: ws.key, brainId: ws.brainId, fetch: cutter.fetch });
    const neuron = await client.api.POST('/v1/neurons', {
      body: { name: 'client-stream', brain_id: ws.brainId, neuron_config: { model: 'openai/sim' } },
    });
    expect(neuron.response.status).toBe(201);
    // The first model call drops mid-stream: its turn is retried and the stream gets a reset.
    sim.configure({ faults: ['disconnect'] });
    const inv = await client.api.POST('/v1/neurons/{id}/invoke', {
      params: { path: { id: String(neuron.data!.id) } },
      body: { message: 'tell me about streams' },
    });
    expect(inv.response.status).toBe(202);
    const jobId = inv.data!.job_id;

    const entries: StreamEntry<JobStreamData>[] = [];
    const shown: string[] = [];
    const seenAtConnect: number[] = [];
    const result = await client.jobs.follow(jobId, {
      retryDelayMs: 50,
      onConnect: () => seenAtConnect.push(entries.length),
      onEntry: (e) => entries.push(e),
      onText: (t) => shown.push(t),
    });

    // Resumed: a second connection after the cut, carrying the last id the client had processed.
    expect(cutter.requests.length).toBeGreaterThanOrEqual(2);
    const before = seenAtConnect[1];
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(entries.length);
    expect(cutter.requests[1].lastEventId).toBe(entries[before - 1].id);
    expect(new URL(cutter.requests[1].url).searchParams.get('after')).toBe(entries[before - 1].id);
    // Nothing lost, nothing repeated: the client saw the stored stream, entry for entry.
    const stored = await app.services.streams.range(app.services.jobs.streamKey(jobId), undefined, 10_000);
    expect(entries.map((e) => e.id)).toEqual(stored.map((e) => e.id));
    expect(entries.filter((e) => e.data.type === 'reset')).toHaveLength(1);

    // The reset dropped the first attempt's text: the reply shrank at the reset, then grew again.
    const resetAt = shown.findIndex((t, i) => i > 0 && t.length < shown[i - 1].length);
    expect(resetAt).toBeGreaterThan(0);
    expect(result.terminal?.data.type).toBe('complete');
    const messages = await client.api.GET('/v1/traces/{id}/messages', { params: { path: { id: inv.data!.trace_id } } });
    const reply = messages.data!.engrams.find((e) => e.source_type === 'neuron');
    expect(result.text).toBe((reply!.content as { content: string }).content);
    expect(result.text.length).toBeGreaterThan(0);
    expect(sim.said.filter((s) => s.user === 'tell me about streams').map((s) => s.text)).toContain(result.text);
  }, 60_000);

  it('polls a job to its end and throws the API error body for a refused call', async () => {
    const ws = await buildWorkspace(app);
    const client = createCortexClient({ baseUrl: app.url, apiKey: ws.key, brainId: ws.brainId });
    const neuron = await client.api.POST('/v1/neurons', {
      body: { name: 'client-poll', brain_id: ws.brainId, neuron_config: { model: 'local/echo' } },
    });
    const inv = await client.api.POST('/v1/neurons/{id}/invoke', {
      params: { path: { id: String(neuron.data!.id) } },
      body: { message: 'echo me' },
    });
    const job = await client.jobs.wait(inv.data!.job_id, { intervalMs: 100, timeoutMs: 30_000 });
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({ text: expect.stringContaining('echo me') });

    const missing = client.jobs.status('00000000-0000-4000-8000-000000000000');
    await expect(missing).rejects.toBeInstanceOf(CortexApiError);
    await expect(missing).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });
    const other = createCortexClient({ baseUrl: app.url, apiKey: 'ctx_not-a-key' });
    await expect(other.jobs.stream(inv.data!.job_id).next()).rejects.toMatchObject({
      status: 401,
      code: 'AUTH_REQUIRED',
    });
  });
  it('stops at once on a finished job: read to its end in one request, resumed after its end by a 204', async () => {
    const ws = await buildWorkspace(app);
    const counter = cuttingFetch(Infinity);
    const client = createCortexClient({ baseUrl: app.url, apiKey: ws.key, brainId: ws.brainId, fetch: counter.fetch });
    const neuron = await client.api.POST('/v1/neurons', {
      body: { name: 'client-ended', brain_id: ws.brainId, neuron_config: { model: 'local/echo' } },
    });
    const inv = await client.api.POST('/v1/neurons/{id}/invoke', {
      params: { path: { id: String(neuron.data!.id) } },
      body: { message: 'finished already' },
    });
    const jobId = inv.data!.job_id;
    await client.jobs.wait(jobId, { intervalMs: 100, timeoutMs: 30_000 });

    const whole = await client.jobs.follow(jobId);
    expect(whole.terminal?.data.type).toBe('complete');
    expect(whole.text).toContain('finished already');
    expect(counter.requests).toHaveLength(1);

    // Resumed from the terminal entry (as after a reload): the API answers 204 and the client returns.
    const started = Date.now();
    const resumed = await client.jobs.follow(jobId, { after: whole.lastEventId });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(resumed).toEqual({ text: '', lastEventId: whole.lastEventId });
    expect(counter.requests).toHaveLength(2);
    expect(counter.requests[1].lastEventId).toBe(whole.lastEventId);
    const entries = [];
    for await (const e of client.jobs.stream(jobId, { after: whole.lastEventId })) entries.push(e);
    expect(entries).toEqual([]);
    expect(counter.requests).toHaveLength(3);

    // A cursor newer than the stream (it went backwards): stream_reset, then the whole stream again.
    const rebuilt: StreamEntry<JobStreamData>[] = [];
    const reset = await client.jobs.follow(jobId, { after: '9999999999999-0', onEntry: (e) => rebuilt.push(e) });
    expect(rebuilt[0]).toMatchObject({ id: '', data: { type: 'stream_reset', after: '9999999999999-0' } });
    expect(rebuilt.slice(1).map((e) => e.id)).toEqual(
      (await app.services.streams.range(app.services.jobs.streamKey(jobId))).map((e) => e.id),
    );
    expect(reset.text).toBe(whole.text);
    expect(reset.terminal?.data.type).toBe('complete');
  });
});
