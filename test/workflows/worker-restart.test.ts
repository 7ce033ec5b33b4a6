import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/schemas/jobs.js';
import { Engram } from '../../src/schemas/traces.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { dataOf, readSse } from '../support/sse.js';
import { spawnWorkerProcess } from '../support/worker.js';

let app: TestApp & { close(): Promise<void> };
let llm: ScriptedOpenAI;
const children: ChildProcess[] = [];

/** A real worker process on the test app's queue, answering with the scripted provider. */
async function spawnWorker(): Promise<ChildProcess> {
  const child = await spawnWorkerProcess(app, { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test-key' });
  children.push(child);
  return child;
}

beforeAll(async () => {
  llm = await startScriptedOpenAI();
  app = await startTestApp({ OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test-key' });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app?.close();
  await llm?.close();
});

describe('durability', () => {
  it('a worker killed mid-run: a new worker finishes the job once, with one neuron engram and no duplicated stream entries', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (await app.post('/v1/neurons', ws.key, { name: 'durable', brain_id: ws.brainId, neuron_config: { model: 'openai/gpt-4o-mini' } })).body as { id: string };
    const chunks = Array.from({ length: 30 }, (_, i) => `w${i} `);
    llm.setDefault(() => ({ chunks, delayMsPerChunk: 100, usage: { prompt_tokens: 5, completion_tokens: 30 } }));
    const first = await spawnWorker();
    const inv = await app.post(`/v1/neurons/${neuron.id}/invoke`, ws.key, { message: 'survive' });
    const jobId = String(inv.body.job_id);
    const headers = { authorization: `Bearer ${ws.key}` };
    // Wait until some tokens are out, then kill the worker hard.
    await readSse(`${app.url}/v1/jobs/${jobId}/stream`, { headers, until: (ev) => ev.filter((e) => dataOf(e).type === 'token').length >= 5, timeoutMs: 60_000 });
    first.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    await spawnWorker();
    const all = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, { headers, timeoutMs: 90_000 });
    expect(all.ended).toBe(true);
    expect(dataOf(all.events.at(-1)!).type).toBe('complete');
    const tokens = all.events.filter((e) => dataOf(e).type === 'token').map((e) => dataOf(e));
    expect(tokens.map((t) => t.index)).toEqual(chunks.map((_, i) => i));
    expect(tokens.map((t) => t.text).join('')).toBe(chunks.join(''));
    expect(all.events.filter((e) => dataOf(e).type === 'complete')).toHaveLength(1);
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    expect(job.status).toBe('completed');
    const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${String(inv.body.trace_id)}/messages`, ws.key)).body.engrams.map((e) => Engram.parse(e));
    expect(msgs.filter((m) => m.source_type === 'neuron')).toHaveLength(1);
    expect(llm.requests.length).toBeGreaterThanOrEqual(2); // the turn really ran twice
  }, 180_000);

  it('a pathway waiting at a human node survives a worker restart and finishes after approval', async () => {
    const ws = await buildWorkspace(app);
    const first = await spawnWorker();
    const created = await app.post('/v1/pathways', ws.key, { name: 'restart-wait', pathway_graph: {
      nodes: [{ id: 's', type: 'start' }, { id: 'h', type: 'human', data: { title: 'ok?' } }, { id: 'y', type: 'output', data: { value: '"approved after restart"' } }, { id: 'n', type: 'output', data: { value: '"rejected"' } }],
      edges: [{ source: 's', target: 'h' }, { source: 'h', target: 'y', handle: 'approve' }, { source: 'h', target: 'n', handle: 'reject' }],
    } }, ws.brainHeaders);
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
    const r = await app.post(`/v1/jobs/${jobId}/input`, ws.key, { input: { type: 'intervention_response', interventionId, action: 'approve' } });
    expect(r.status).toBe(200);
    for (let i = 0; i < 300 && !['completed', 'failed'].includes(job.status); i++) {
      await new Promise((res) => setTimeout(res, 100));
      job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    }
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({ output: 'approved after restart' });
  }, 180_000);
});
