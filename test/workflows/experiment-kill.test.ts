/**
 * An experiment of 50 items at concurrency 5 whose worker is SIGKILLed mid-way: a new worker
 * replays the experiment's workflow and finishes it; every item is scored, and each item's target
 * ran as exactly one job (the experiment's child jobs are counted through the jobs list).
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { lastUserText } from '../support/scripted-openai.js';
import { startProviderSim, type ProviderSim } from '../support/provider-sim.js';
import { spawnWorkerProcess } from '../support/worker.js';

let app: TestApp & { close(): Promise<void> };
let sim: ProviderSim;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Each model call thinks a while, so items are in flight when the worker dies; the answer echoes the item.
  sim = await startProviderSim({
    firstTokenMs: [300, 700],
    interTokenMs: [5, 20],
    tokens: [3, 6],
    text: (body) => {
      const m = /^echo: (.*)$/s.exec(lastUserText(body));
      return m ? m[1] : null;
    },
  });
  app = await startTestApp({ OPENAI_BASE_URL: sim.baseURL, OPENAI_API_KEY: 'test-key' });
}, 60_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app?.close();
  await sim?.close();
});

async function spawnWorker(): Promise<ChildProcess> {
  const child = await spawnWorkerProcess(app, { OPENAI_BASE_URL: sim.baseURL, OPENAI_API_KEY: 'test-key' });
  children.push(child);
  return child;
}

describe('experiment durability', () => {
  it('50 items at concurrency 5, the worker killed mid-way: 50 scored items, each target run once', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'echo',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status, n.text).toBe(201);
    const items = Array.from({ length: 50 }, (_, i) => ({ input: `echo: item ${i}`, expected: `item ${i}` }));
    const ds = await app.post('/v1/datasets', ws.key, { name: 'fifty', items }, ws.brainHeaders);
    expect(ds.status, ds.text).toBe(201);

    const first = await spawnWorker();
    const r = await app.post('/v1/experiments', ws.key, {
      dataset_id: ds.body.id,
      target: { neuron_id: n.body.id },
      evaluators: [{ type: 'exact' }, { type: 'contains' }],
      concurrency: 5,
    });
    expect(r.status, r.text).toBe(202);
    const id = String(r.body.id);

    // Kill once some items are scored and others are in flight.
    const t0 = Date.now();
    const read = async () => (await app.get(`/v1/experiments/${id}`, ws.key)).body;
    let e = await read();
    while (Number(e.items_done) < 8) {
      if (Date.now() - t0 > 90_000) throw new Error(`experiment never got going: ${JSON.stringify(e)}`);
      await new Promise((res) => setTimeout(res, 100));
      e = await read();
    }
    const before = Number(e.items_done);
    first.kill('SIGKILL');
    expect(before).toBeLessThan(50);
    await new Promise((res) => setTimeout(res, 500));
    await spawnWorker();

    while (!['completed', 'failed', 'cancelled'].includes(String(e.status))) {
      if (Date.now() - t0 > 240_000) throw new Error(`experiment still ${String(e.status)}: ${JSON.stringify(e)}`);
      await new Promise((res) => setTimeout(res, 500));
      e = await read();
    }
    expect(e.failed_reason ?? null).toBeNull();
    expect(e).toMatchObject({ status: 'completed', items_done: 50, progress: 100 });
    expect(e.aggregates).toMatchObject({ items: 50, scored: 50, failed: 0, pass_rate: 1 });

    const rows = (await app.get<{ items: Record<string, unknown>[] }>(`/v1/experiments/${id}/items?limit=100`, ws.key))
      .body.items;
    expect(rows).toHaveLength(50);
    rows.forEach((row, i) => expect(row).toMatchObject({ status: 'scored', output: `item ${i}`, passed: true }));
    // One job per item: the experiment's child jobs are exactly the 50 recorded on its items.
    const jobs = await app.get<{ jobs: { job_id: string; status: string }[]; total: number }>(
      `/v1/jobs?parent_job_id=${id}&limit=100`,
      ws.key,
    );
    expect(jobs.status, jobs.text).toBe(200);
    expect(jobs.body.total).toBe(50);
    expect(new Set(jobs.body.jobs.map((j) => j.job_id))).toEqual(new Set(rows.map((row) => String(row.job_id))));
    expect(jobs.body.jobs.every((j) => j.status === 'completed')).toBe(true);
    // Every item's message reached the model; a model turn cut by the kill is retried within its own job.
    const asked = new Set(sim.said.map((s) => s.user));
    for (const it of items) expect(asked.has(it.input)).toBe(true);
  }, 300_000);
});
