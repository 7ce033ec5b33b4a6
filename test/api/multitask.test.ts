import { describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { ReceptorList } from '../../src/receptors/schemas.js';
import { Engram } from '../../src/traces/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { lastUserText } from '../support/scripted-openai.js';
import { dataOf, readSse } from '../support/sse.js';
import { usePlatform } from '../support/platform.js';
import { systemScope } from '../../src/kernel/scope.js';
import { TRACE_WRITE_MARGIN_MS } from '../../src/jobs/service.js';
import { traceWriteGuard } from '../../src/runs/trace-writes.js';

/*
 * Double-texting (docs/neurons.md): an invoke on a trace whose run has not ended takes
 * multitask_strategy reject, enqueue (default), interrupt or rollback. Two runs never write into
 * one trace at the same time. Real API, worker, Temporal, store and Redis; the model is the
 * scripted OpenAI server: a message starting with "slow" streams 40 words 100 ms apart, any other
 * answers "re: <message>" in a few quick chunks.
 */
const { app, llm } = usePlatform();
const MODEL = 'openai/gpt-4o-mini';
const SLOW_WORDS = Array.from({ length: 40 }, (_, i) => `w${i} `);

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function setup() {
  const ws = await buildWorkspace(app);
  const r = await app.post('/v1/neurons', ws.key, {
    name: `texter-${Math.random().toString(36).slice(2, 8)}`,
    brain_id: ws.brainId,
    neuron_config: { model: MODEL, system_prompt: 'You answer.' },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  llm.setDefault((body) => {
    const text = lastUserText(body);
    if (text.startsWith('slow')) return { chunks: SLOW_WORDS, delayMsPerChunk: 100 };
    return { chunks: ['re: ', text], delayMsPerChunk: 30 };
  });
  return { ws, neuronId: String((r.body as { id: string }).id) };
}

async function invoke(ws: Ws, neuronId: string, body: Record<string, unknown>) {
  return app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, body);
}

async function status(ws: Ws, jobId: string) {
  return Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
}

async function settled(ws: Ws, jobId: string, timeoutMs = 40_000) {
  const started = Date.now();
  for (;;) {
    const job = await status(ws, jobId);
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() - started > timeoutMs) throw new Error(`job ${jobId} still ${job.status}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

async function engrams(ws: Ws, traceId: string) {
  const r = await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key);
  return r.body.engrams.map((e) => Engram.parse(e));
}

/** Waits until the job's stream shows `n` tokens (the run is streaming its reply). */
async function tokensSeen(ws: Ws, jobId: string, n: number) {
  await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
    headers: { authorization: `Bearer ${ws.key}` },
    timeoutMs: 30_000,
    until: (ev) => ev.filter((e) => dataOf(e).type === 'token').length >= n,
  });
}

/** The receptor every neuron gets (its default http receptor), which fires the neuron. */
async function receptorOf(ws: Ws, neuronId: string) {
  const receptors = ReceptorList.parse((await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body);
  const receptor = receptors.receptors.find((x) => x.executable_target.id === neuronId)!;
  expect(receptor).toBeDefined();
  return receptor;
}

/** A trace with one finished exchange, so later runs continue an existing trace. */
async function traceWithHistory(ws: Ws, neuronId: string) {
  const first = await invoke(ws, neuronId, { message: 'hello' });
  expect(first.status).toBe(202);
  expect((await settled(ws, String(first.body.job_id))).status).toBe('completed');
  return String(first.body.trace_id);
}

describe('double-texting on one trace', () => {
  it('reject: a second invoke while the run goes is 409 TRACE_BUSY naming the running job; once it ended, accepted', async () => {
    const { ws, neuronId } = await setup();
    const traceId = await traceWithHistory(ws, neuronId);
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    const b = await invoke(ws, neuronId, { message: 'second', trace_id: traceId, multitask_strategy: 'reject' });
    expect(b.status, JSON.stringify(b.body)).toBe(409);
    expect(b.body).toMatchObject({ code: 'TRACE_BUSY' });
    expect(String(b.body.message)).toContain(aId);
    expect((await settled(ws, aId)).status).toBe('completed');
    // Nothing of the refused invoke was stored.
    expect((await engrams(ws, traceId)).map((e) => e.content.content)).not.toContain('second');
    const c = await invoke(ws, neuronId, { message: 'third', trace_id: traceId, multitask_strategy: 'reject' });
    expect(c.status, JSON.stringify(c.body)).toBe(202);
    expect((await settled(ws, String(c.body.job_id))).status).toBe('completed');
  }, 120_000);

  it('a bad multitask_strategy is a 400 naming the field', async () => {
    const { ws, neuronId } = await setup();
    const r = await invoke(ws, neuronId, { message: 'x', multitask_strategy: 'overwrite' });
    expect(r.status).toBe(400);
    expect(String(r.body.message)).toMatch(/multitask_strategy/);
  });

  it('enqueue (default): the second run waits pending naming the first, starts after it ended, engrams in order', async () => {
    const { ws, neuronId } = await setup();
    const traceId = await traceWithHistory(ws, neuronId);
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    const b = await invoke(ws, neuronId, { message: 'second', trace_id: traceId });
    expect(b.status).toBe(202);
    const bId = String(b.body.job_id);
    const waiting = await status(ws, bId);
    expect(waiting.status).toBe('pending');
    expect(waiting.waits_for_job_id).toBe(aId);
    expect(waiting.current_step).toContain(aId);
    const [ja, jb] = [await settled(ws, aId), await settled(ws, bId)];
    expect(ja.status).toBe('completed');
    expect(jb.status).toBe('completed');
    // B left pending only after A ended.
    expect(Date.parse(jb.processed_at!)).toBeGreaterThanOrEqual(Date.parse(ja.finished_at!));
    const texts = (await engrams(ws, traceId)).map((e) => `${e.source_type}:${e.content.content}`);
    expect(texts).toEqual([
      'user:hello',
      'neuron:re: hello',
      'user:slow one',
      `neuron:${SLOW_WORDS.join('')}`,
      'user:second',
      'neuron:re: second',
    ]);
    // B's model call saw A's whole reply as history.
    const sent = llm.requests.find((r) => lastUserText(r) === 'second')!;
    expect(JSON.stringify(sent.messages)).toContain(SLOW_WORDS.join('').trim());
  }, 120_000);

  it('interrupt: the running run is cancelled, its partial reply kept and marked interrupted, then the new run runs', async () => {
    const { ws, neuronId } = await setup();
    const traceId = await traceWithHistory(ws, neuronId);
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    await tokensSeen(ws, aId, 3);
    const b = await invoke(ws, neuronId, {
      message: 'stop, do this',
      trace_id: traceId,
      multitask_strategy: 'interrupt',
    });
    expect(b.status).toBe(202);
    const bId = String(b.body.job_id);
    const [ja, jb] = [await settled(ws, aId), await settled(ws, bId)];
    expect(ja.status).toBe('failed');
    expect(ja.failedReason).toMatch(/^cancelled: interrupted by job /);
    expect(ja.failedReason).toContain(bId);
    expect(jb.status).toBe('completed');
    expect(Date.parse(jb.processed_at!)).toBeGreaterThanOrEqual(Date.parse(ja.finished_at!));
    const es = await engrams(ws, traceId);
    expect(es.map((e) => e.source_type)).toEqual(['user', 'neuron', 'user', 'neuron', 'user', 'neuron']);
    const partial = es[3]!;
    expect(partial.metadata).toMatchObject({ interrupted: true, interrupted_by: bId, job_id: aId });
    // Part of A's reply: a non-empty prefix, not the whole of it.
    expect(partial.content.content.length).toBeGreaterThan(0);
    expect(SLOW_WORDS.join('').startsWith(partial.content.content)).toBe(true);
    expect(partial.content.content).not.toBe(SLOW_WORDS.join(''));
    expect(es[4]!.content.content).toBe('stop, do this');
    expect(es[5]!.content.content).toBe('re: stop, do this');
  }, 120_000);

  it('rollback: the running run is cancelled and its engrams are removed from the trace; counters follow', async () => {
    const { ws, neuronId } = await setup();
    const traceId = await traceWithHistory(ws, neuronId);
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    await tokensSeen(ws, aId, 3);
    const b = await invoke(ws, neuronId, { message: 'instead', trace_id: traceId, multitask_strategy: 'rollback' });
    expect(b.status).toBe(202);
    const bId = String(b.body.job_id);
    const [ja, jb] = [await settled(ws, aId), await settled(ws, bId)];
    expect(ja.status).toBe('failed');
    expect(ja.failedReason).toMatch(/^cancelled: rolled back by job /);
    expect(jb.status).toBe('completed');
    const texts = (await engrams(ws, traceId)).map((e) => `${e.source_type}:${e.content.content}`);
    expect(texts).toEqual(['user:hello', 'neuron:re: hello', 'user:instead', 'neuron:re: instead']);
    const trace = (await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace as { message_count: number };
    expect(trace.message_count).toBe(4);
    // B's model call did not see A's message.
    const sent = llm.requests.find((r) => lastUserText(r) === 'instead')!;
    expect(JSON.stringify(sent.messages)).not.toContain('slow one');
  }, 120_000);

  it('a receptor firing into the trace: reject is 409 TRACE_BUSY; enqueue waits for the running run, then runs', async () => {
    const { ws, neuronId } = await setup();
    const receptors = ReceptorList.parse((await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body);
    const receptor = receptors.receptors.find((x) => x.executable_target.id === neuronId)!;
    expect(receptor).toBeDefined();
    const traceId = await traceWithHistory(ws, neuronId);
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    const fire = (body: Record<string, unknown>) =>
      app.post(`/v1/receptors/${receptor.id}/fire`, ws.key, { trace_id: traceId, ...body });
    const refused = await fire({ invoke: { message: 'fired' }, multitask_strategy: 'reject' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body).toMatchObject({ code: 'TRACE_BUSY' });
    expect(String(refused.body.message)).toContain(aId);
    const queued = await fire({ invoke: { message: 'fired' } });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const fId = String(queued.body.job_id);
    expect((await status(ws, fId)).waits_for_job_id).toBe(aId);
    const [ja, jf] = [await settled(ws, aId), await settled(ws, fId)];
    expect(ja.status).toBe('completed');
    expect(jf.status).toBe('completed');
    expect(Date.parse(jf.processed_at!)).toBeGreaterThanOrEqual(Date.parse(ja.finished_at!));
    const texts = (await engrams(ws, traceId)).map((e) => `${e.source_type}:${e.content.content}`);
    expect(texts).toEqual([
      'user:hello',
      'neuron:re: hello',
      'user:slow one',
      `neuron:${SLOW_WORDS.join('')}`,
      'user:fired',
      'neuron:re: fired',
    ]);
  }, 120_000);

  /** A slow run on a trace with history, then a receptor fire into the trace with `strategy`: both jobs once settled. */
  const fireWhileRunning = async (strategy: 'interrupt' | 'rollback', message: string) => {
    const { ws, neuronId } = await setup();
    const receptor = await receptorOf(ws, neuronId);
    const traceId = await traceWithHistory(ws, neuronId);
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    await tokensSeen(ws, aId, 3);
    const fired = await app.post(`/v1/receptors/${receptor.id}/fire`, ws.key, {
      trace_id: traceId,
      invoke: { message },
      multitask_strategy: strategy,
    });
    expect(fired.status, JSON.stringify(fired.body)).toBe(202);
    const fId = String(fired.body.job_id);
    const [ja, jf] = [await settled(ws, aId), await settled(ws, fId)];
    return { ws, traceId, aId, fId, ja, jf };
  };

  it('a receptor firing into the trace: interrupt keeps the partial reply marked interrupted, then the fire runs', async () => {
    const { ws, traceId, aId, fId, ja, jf } = await fireWhileRunning('interrupt', 'fired instead');
    expect(ja.status).toBe('failed');
    expect(ja.failedReason).toBe(`cancelled: interrupted by job ${fId}`);
    expect(jf.status).toBe('completed');
    expect(Date.parse(jf.processed_at!)).toBeGreaterThanOrEqual(Date.parse(ja.finished_at!));
    const es = await engrams(ws, traceId);
    expect(es.map((e) => e.source_type)).toEqual(['user', 'neuron', 'user', 'neuron', 'user', 'neuron']);
    const partial = es[3]!;
    expect(partial.metadata).toMatchObject({ interrupted: true, interrupted_by: fId, job_id: aId });
    expect(SLOW_WORDS.join('').startsWith(partial.content.content)).toBe(true);
    expect(partial.content.content).not.toBe(SLOW_WORDS.join(''));
    expect(es[4]!.content.content).toBe('fired instead');
    expect(es[5]!.content.content).toBe('re: fired instead');
  }, 120_000);

  it("a receptor firing into the trace: rollback removes the running run's engrams, then the fire runs", async () => {
    const { ws, traceId, fId, ja, jf } = await fireWhileRunning('rollback', 'fired to roll back');
    expect(ja.status).toBe('failed');
    expect(ja.failedReason).toBe(`cancelled: rolled back by job ${fId}`);
    expect(jf.status).toBe('completed');
    const texts = (await engrams(ws, traceId)).map((e) => `${e.source_type}:${e.content.content}`);
    expect(texts).toEqual([
      'user:hello',
      'neuron:re: hello',
      'user:fired to roll back',
      'neuron:re: fired to roll back',
    ]);
    const sent = llm.requests.find((r) => lastUserText(r) === 'fired to roll back')!;
    expect(JSON.stringify(sent.messages)).not.toContain('slow one');
  }, 120_000);

  it('a superseded run: a write it began before its end is waited out, none starts after it', async () => {
    const { ws, neuronId } = await setup();
    const traceId = await traceWithHistory(ws, neuronId);
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    await tokensSeen(ws, aId, 3);
    // A's worker is about to write into the trace (its reply's save, as finish takes it): its lease.
    const { jobs, traces } = app.services;
    const guard = await traceWriteGuard(jobs, ws.workspaceId, { jobId: aId, depth: 0 });
    expect(guard).not.toBeNull();
    const until = (await app.services.jobs.leaseTraceWrite(ws.workspaceId, [aId]))!;
    const b = await invoke(ws, neuronId, {
      message: 'stop, do this',
      trace_id: traceId,
      multitask_strategy: 'interrupt',
    });
    expect(b.status).toBe(202);
    const bId = String(b.body.job_id);
    for (let i = 0; (await status(ws, aId)).status !== 'failed'; i++) {
      expect(i).toBeLessThan(300);
      await new Promise((r) => setTimeout(r, 50));
    }
    // A ended: a write it starts from now on is refused (no lease), and nothing of it is stored.
    expect(await traceWriteGuard(jobs, ws.workspaceId, { jobId: aId, depth: 0 })).toBeNull();
    // The lease it took before its end runs out: renewing it is refused, the append stores nothing.
    const renewAt = until.getTime() - TRACE_WRITE_MARGIN_MS + 50;
    await new Promise((r) => setTimeout(r, Math.max(0, renewAt - Date.now())));
    const late = traces.append(
      systemScope(ws.workspaceId, ws.brainId),
      traceId,
      { content: { type: 'neuron', content: 'late write of A' }, sourceType: 'neuron', sourceId: neuronId, jobId: aId },
      { guard: guard! },
    );
    await expect(late).rejects.toMatchObject({ status: 409 });
    const jb = await settled(ws, bId);
    expect(jb.status).toBe('completed');
    // B started only once A's lease could no longer cover a write.
    expect(Date.parse(jb.processed_at!)).toBeGreaterThanOrEqual(until.getTime());
    const es = await engrams(ws, traceId);
    expect(es.map((e) => e.content.content)).not.toContain('late write of A');
    expect(es.map((e) => e.source_type)).toEqual(['user', 'neuron', 'user', 'neuron', 'user', 'neuron']);
    expect(es[3]!.metadata).toMatchObject({ interrupted: true, job_id: aId });
    expect(es.slice(4).map((e) => e.content.content)).toEqual(['stop, do this', 're: stop, do this']);
  }, 120_000);

  it('a pathway run that names the trace takes part: it waits for the running invoke, and an invoke waits for it', async () => {
    const { ws, neuronId } = await setup();
    const traceId = await traceWithHistory(ws, neuronId);
    const created = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: `on-trace-${Math.random().toString(36).slice(2, 8)}`,
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 'd', type: 'delay', data: { ms: 2_000 } },
            { id: 'o', type: 'output', data: { value: '1' } },
          ],
          edges: [
            { source: 's', target: 'd' },
            { source: 'd', target: 'o' },
          ],
        },
      },
      ws.brainHeaders,
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const pathwayId = String(created.body.id);
    const execute = async () => {
      const r = await app.post(`/v1/pathways/${pathwayId}/execute`, ws.key, { trace_id: traceId }, ws.brainHeaders);
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      return String(r.body.job_id);
    };
    // A pathway run behind a running invoke waits for it.
    const a = await invoke(ws, neuronId, { message: 'slow one', trace_id: traceId });
    const aId = String(a.body.job_id);
    const p1 = await execute();
    expect((await status(ws, p1)).waits_for_job_id).toBe(aId);
    const [ja, jp1] = [await settled(ws, aId), await settled(ws, p1)];
    expect(ja.status).toBe('completed');
    expect(jp1.status).toBe('completed');
    expect(Date.parse(jp1.processed_at!)).toBeGreaterThanOrEqual(Date.parse(ja.finished_at!));
    // An invoke behind a running pathway run waits for it.
    const p2 = await execute();
    const b = await invoke(ws, neuronId, { message: 'after the pathway', trace_id: traceId });
    const bId = String(b.body.job_id);
    expect((await status(ws, bId)).waits_for_job_id).toBe(p2);
    const [jp2, jb] = [await settled(ws, p2), await settled(ws, bId)];
    expect(jp2.status).toBe('completed');
    expect(jb.status).toBe('completed');
    expect(Date.parse(jb.processed_at!)).toBeGreaterThanOrEqual(Date.parse(jp2.finished_at!));
  }, 120_000);

  it('a burst of concurrent invokes on one trace: every run completes, none overlaps another, engrams pair up in order', async () => {
    const { ws, neuronId } = await setup();
    const traceId = await traceWithHistory(ws, neuronId);
    const N = 6;
    const invoked = await Promise.all(
      Array.from({ length: N }, (_, i) => invoke(ws, neuronId, { message: `burst ${i}`, trace_id: traceId })),
    );
    for (const r of invoked) expect(r.status, JSON.stringify(r.body)).toBe(202);
    const jobs = await Promise.all(invoked.map((r) => settled(ws, String(r.body.job_id), 90_000)));
    for (const j of jobs) expect(j.status).toBe('completed');
    // Runs one after another: sorted by start, each starts after the one before ended.
    const spans = jobs
      .map((j) => ({ start: Date.parse(j.processed_at!), end: Date.parse(j.finished_at!) }))
      .sort((x, y) => x.start - y.start);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end);
    // Each human turn is followed by its own reply: nothing interleaved.
    const es = (await engrams(ws, traceId)).slice(2);
    expect(es).toHaveLength(2 * N);
    for (let i = 0; i < N; i++) {
      const [human, reply] = [es[2 * i]!, es[2 * i + 1]!];
      expect(human.source_type).toBe('user');
      expect(reply.content.content).toBe(`re: ${human.content.content}`);
    }
  }, 240_000);
});
