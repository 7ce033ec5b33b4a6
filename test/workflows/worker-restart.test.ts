import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { Engram } from '../../src/traces/schemas.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { dataOf, readSse, shownReply } from '../support/sse.js';
import { startProviderSim, type ProviderSim } from '../support/provider-sim.js';
import { spawnWorkerProcess } from '../support/worker.js';

let app: TestApp & { close(): Promise<void> };
let llm: ScriptedOpenAI;
let sim: ProviderSim;
const children: ChildProcess[] = [];

/** A real worker process on the test app's queue, answering with the scripted provider (or the given one). */
async function spawnWorker(baseURL = llm.baseURL): Promise<ChildProcess> {
  const child = await spawnWorkerProcess(app, { OPENAI_BASE_URL: baseURL, OPENAI_API_KEY: 'test-key' });
  children.push(child);
  return child;
}

beforeAll(async () => {
  llm = await startScriptedOpenAI();
  sim = await startProviderSim({ tokens: [25, 35], interTokenMs: [40, 90], firstTokenMs: [100, 600] });
  // These tests kill the worker while it streams a turn: the first turn stays in the worker
  // (test/workflows/first-turn.test.ts covers the API's first turn and an API killed under it).
  app = await startTestApp({ OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test-key', FIRST_TURN_IN_API: false });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app?.close();
  await llm?.close();
  await sim?.close();
});

describe('durability', () => {
  it('a worker killed mid-run: a new worker finishes the job once, with one neuron engram and no duplicated stream entries', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (
      await app.post('/v1/neurons', ws.key, {
        name: 'durable',
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/gpt-4o-mini' },
      })
    ).body as { id: string };
    const chunks = Array.from({ length: 30 }, (_, i) => `w${i} `);
    llm.setDefault(() => ({ chunks, delayMsPerChunk: 100, usage: { prompt_tokens: 5, completion_tokens: 30 } }));
    const first = await spawnWorker();
    const inv = await app.post(`/v1/neurons/${neuron.id}/invoke`, ws.key, { message: 'survive' });
    const jobId = String(inv.body.job_id);
    const headers = { authorization: `Bearer ${ws.key}` };
    // Wait until some tokens are out, then kill the worker hard.
    await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
      headers,
      until: (ev) => ev.filter((e) => dataOf(e).type === 'token').length >= 5,
      timeoutMs: 60_000,
    });
    first.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    await spawnWorker();
    const all = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, { headers, timeoutMs: 90_000 });
    expect(all.ended).toBe(true);
    expect(dataOf(all.events.at(-1)!).type).toBe('complete');
    // The retried turn starts over after a reset: what a reader shows is the retry's whole text.
    const entries = all.events.map((e) => dataOf(e));
    const reset = entries.findIndex((e) => e.type === 'reset');
    expect(reset).toBeGreaterThan(0);
    const retried = entries.slice(reset).filter((e) => e.type === 'token');
    expect(retried.map((t) => t.index)).toEqual(chunks.map((_, i) => i));
    expect(retried.every((t) => t.attempt === entries[reset].attempt)).toBe(true);
    expect(shownReply(entries)).toBe(chunks.join(''));
    expect(all.events.filter((e) => dataOf(e).type === 'complete')).toHaveLength(1);
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    expect(job.status).toBe('completed');
    const msgs = (
      await app.get<{ engrams: unknown[] }>(`/v1/traces/${String(inv.body.trace_id)}/messages`, ws.key)
    ).body.engrams.map((e) => Engram.parse(e));
    expect(msgs.filter((m) => m.source_type === 'neuron')).toHaveLength(1);
    expect(llm.requests.length).toBeGreaterThanOrEqual(2); // the turn really ran twice
  }, 180_000);

  it('a pathway waiting at a human node survives a worker restart and finishes after approval', async () => {
    const ws = await buildWorkspace(app);
    const first = await spawnWorker();
    const created = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'restart-wait',
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 'h', type: 'human', data: { title: 'ok?' } },
            { id: 'y', type: 'output', data: { value: '"approved after restart"' } },
            { id: 'n', type: 'output', data: { value: '"rejected"' } },
          ],
          edges: [
            { source: 's', target: 'h' },
            { source: 'h', target: 'y', handle: 'approve' },
            { source: 'h', target: 'n', handle: 'reject' },
          ],
        },
      },
      ws.brainHeaders,
    );
    const exec = await app.post(`/v1/pathways/${String(created.body.id)}/execute`, ws.key, {}, ws.brainHeaders);
    const jobId = String(exec.body.job_id);
    let job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    for (let i = 0; i < 200 && job.status !== 'waiting'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    }
    expect(job.status).toBe('waiting');
    first.kill('SIGKILL');
    await spawnWorker();
    const interventionId = String(job.waitingFor!.interventionId);
    const r = await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
      input: { type: 'intervention_response', interventionId, action: 'approve' },
    });
    expect(r.status).toBe(200);
    for (let i = 0; i < 300 && !['completed', 'failed'].includes(job.status); i++) {
      await new Promise((res) => setTimeout(res, 100));
      job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    }
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({ output: 'approved after restart' });
  }, 180_000);

  it('20 concurrent runs on a model whose text differs per call, worker SIGKILLed mid-stream: all complete, each stream shows exactly its stored reply, one terminal entry each', async () => {
    for (const c of children.splice(0)) c.kill('SIGKILL'); // only workers that talk to the simulator from here on
    const ws = await buildWorkspace(app);
    const neuron = (
      await app.post('/v1/neurons', ws.key, {
        name: 'realistic',
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/sim-model', temperature: 0.9 },
      })
    ).body as { id: string };
    const first = await spawnWorker(sim.baseURL);
    const invokes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.post(`/v1/neurons/${neuron.id}/invoke`, ws.key, { message: `run ${i}` }),
      ),
    );
    const jobs = invokes.map((r) => ({ jobId: String(r.body.job_id), traceId: String(r.body.trace_id) }));
    const entries = async (jobId: string) =>
      (await app.services.streams.range(app.services.jobs.streamKey(jobId), undefined, 100_000)).map((e) => e.data);
    // Kill the worker hard while most runs are mid-stream.
    for (let i = 0; i < 300; i++) {
      const streaming = (
        await Promise.all(jobs.map(async (j) => (await entries(j.jobId)).filter((e) => e.type === 'token').length >= 3))
      ).filter(Boolean).length;
      if (streaming >= 10) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    first.kill('SIGKILL');
    await spawnWorker(sim.baseURL);
    let reset = 0;
    for (const j of jobs) {
      let status = '';
      for (let i = 0; i < 600 && status !== 'completed' && status !== 'failed'; i++) {
        status = String((await app.get(`/v1/jobs/${j.jobId}/status`, ws.key)).body.status);
        if (status !== 'completed' && status !== 'failed') await new Promise((r) => setTimeout(r, 200));
      }
      expect(status, j.jobId).toBe('completed');
      const all = await entries(j.jobId);
      const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${j.traceId}/messages`, ws.key)).body.engrams.map(
        (e) => Engram.parse(e),
      );
      const replies = msgs.filter((m) => m.source_type === 'neuron');
      expect(replies).toHaveLength(1);
      const stored = replies[0].content.content;
      // The concatenated token entries after the last reset are the stored reply, and no token of an older attempt follows it.
      const last = all.map((e) => e.type).lastIndexOf('reset');
      const after = all.slice(last + 1).filter((e) => e.type === 'token');
      if (last >= 0) {
        reset++;
        expect(after.every((t) => t.attempt === all[last].attempt)).toBe(true);
      }
      expect(after.map((t) => t.text).join('')).toBe(stored);
      expect(shownReply(all)).toBe(stored);
      expect(sim.said.map((s) => s.text)).toContain(stored);
      const terminal = all.filter((e) => e.type === 'complete' || e.type === 'error');
      expect(terminal).toHaveLength(1);
      expect(all.at(-1)).toBe(terminal[0]);
    }
    // The kill really cut runs mid-stream (their retries differ from what was streamed first).
    expect(reset).toBeGreaterThanOrEqual(5);
  }, 240_000);
});
