import type { ChildProcess } from 'node:child_process';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../scripts/embedded.js';
import { closeDeps, createDeps, type Deps } from '../../src/compose/deps.js';
import { FIRST_TURN_LEASE_MS } from '../../src/runs/first-turns.js';
import { Engram } from '../../src/traces/schemas.js';
import { createWorker } from '../../worker/index.js';
import { buildWorkspace, makeClient, startTestApp, type TestApp } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { startProviderSim, type ProviderSim } from '../support/provider-sim.js';
import { dataOf, readSse, shownReply } from '../support/sse.js';
import { spawnApiProcess } from '../support/worker.js';

/*
 * An invoke's first model turn starts in the API and the workflow adopts it
 * (src/runs/first-turns.ts). The API and the worker talk to two different simulated
 * providers here (slow, different text on every call), so every test can tell which process made
 * which call: a spliced or doubled answer, or a turn run twice, shows in what each one said.
 */
let app: TestApp & { close(): Promise<void> };
let apiSim: ProviderSim;
let workerSim: ProviderSim;
let workerDeps: Deps;
let worker: { worker: Worker; connection: NativeConnection; running: Promise<void> };
const children: ChildProcess[] = [];

beforeAll(async () => {
  apiSim = await startProviderSim({ tokens: [12, 20], interTokenMs: [10, 30], firstTokenMs: [20, 120] });
  workerSim = await startProviderSim({ tokens: [12, 20], interTokenMs: [10, 30], firstTokenMs: [20, 120], seed: 7 });
  app = await startTestApp({ OPENAI_BASE_URL: apiSim.baseURL, OPENAI_API_KEY: 'test-key' });
  // The worker shares the app's stores and task queue but not its provider.
  workerDeps = await createDeps({ ...app.config, OPENAI_BASE_URL: workerSim.baseURL }, app.deps.log);
  const w = await createWorker(workerDeps);
  worker = { ...w, running: w.worker.run() };
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  if (worker?.worker.getState() === 'RUNNING') worker.worker.shutdown();
  await worker?.running.catch(() => undefined);
  await worker?.connection.close().catch(() => undefined);
  if (workerDeps) await closeDeps(workerDeps);
  await app?.close();
  await apiSim?.close();
  await workerSim?.close();
});

async function neuronIn(ws: Awaited<ReturnType<typeof buildWorkspace>>, name: string): Promise<string> {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim-model', temperature: 0.9 },
  });
  expect(r.status).toBe(201);
  return String(r.body.id);
}

const streamOf = async (jobId: string) =>
  (await app.services.streams.range(app.services.jobs.streamKey(jobId), undefined, 100_000)).map((e) => e.data);
const calls = (sim: ProviderSim, user: string) => sim.said.filter((s) => s.user === user);

/** The run's one neuron engram (its stored reply). */
async function storedReply(ws: Awaited<ReturnType<typeof buildWorkspace>>, traceId: string): Promise<string> {
  const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams.map((e) =>
    Engram.parse(e),
  );
  const replies = msgs.filter((m) => m.source_type === 'neuron');
  expect(replies).toHaveLength(1);
  return replies[0].content.content;
}

/**
 * A first turn the worker ran again after the API's attempt did not finish: the stream holds the
 * API's attempt-1 tokens, then a reset to attempt 2 and only attempt-2 tokens, one terminal entry
 * last; the stored reply is the worker's one call, and it is exactly what a reader shows.
 */
async function expectTakenOver(
  ws: Awaited<ReturnType<typeof buildWorkspace>>,
  jobId: string,
  traceId: string,
  user: string,
) {
  const entries = await streamOf(jobId);
  const reset = entries.findIndex((e) => e.type === 'reset');
  expect(reset).toBeGreaterThan(0);
  expect(entries[reset]).toMatchObject({ turn: 0, attempt: 2 });
  // The API's attempt did stream part of its (different) answer first.
  expect(entries.slice(0, reset).some((e) => e.type === 'token' && e.attempt === 1)).toBe(true);
  expect(
    entries
      .slice(reset)
      .filter((e) => e.type === 'token')
      .every((t) => t.attempt === 2),
  ).toBe(true);
  const stored = await storedReply(ws, traceId);
  expect(calls(workerSim, user).map((s) => s.text)).toEqual([stored]);
  expect(shownReply(entries)).toBe(stored);
  expect(entries.filter((e) => e.type === 'complete')).toHaveLength(1);
  expect(entries.at(-1)?.type).toBe('complete');
}

describe('the first turn starts in the API', () => {
  it('the API makes the one provider call of a plain run; the workflow adopts its outcome (no second call, no reset)', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'adopted');
    const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'adopt me' });
    expect(inv.status).toBe(202);
    const jobId = String(inv.body.job_id);
    const job = await settleJob(app, ws.key, jobId);
    expect(job.status, String(job.failedReason)).toBe('completed');
    expect(calls(apiSim, 'adopt me')).toHaveLength(1);
    expect(calls(workerSim, 'adopt me')).toHaveLength(0);
    const entries = await streamOf(jobId);
    expect(entries.some((e) => e.type === 'reset')).toBe(false);
    expect(entries.filter((e) => e.type === 'token').every((t) => t.attempt === 1)).toBe(true);
    const stored = await storedReply(ws, String(inv.body.trace_id));
    expect(stored).toBe(calls(apiSim, 'adopt me')[0].text);
    expect(shownReply(entries)).toBe(stored);
    expect((job.result as { text: string }).text).toBe(stored);
    // One ledger row for the one call, in the job's usage.
    expect((job.result as { usage: { totalTokens: number } }).usage.totalTokens).toBeGreaterThan(0);
    expect(await app.services.firstTurns.state(jobId)).toMatchObject({ state: 'done' });
  });

  it('a first turn that thinks longer than the lease is not taken over: the API renews it while the call is alive', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'slow-first');
    apiSim.configure({ firstTokenMs: FIRST_TURN_LEASE_MS + 1_500 });
    try {
      const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'think past the lease' });
      const jobId = String(inv.body.job_id);
      const job = await settleJob(app, ws.key, jobId, 30_000);
      expect(job.status, String(job.failedReason)).toBe('completed');
      expect(calls(apiSim, 'think past the lease')).toHaveLength(1);
      expect(calls(workerSim, 'think past the lease')).toHaveLength(0);
      expect((await streamOf(jobId)).some((e) => e.type === 'reset')).toBe(false);
    } finally {
      apiSim.configure({ firstTokenMs: [20, 120] });
    }
  }, 40_000);

  it("the API's call dropped mid-stream: the worker runs the turn as attempt 2, whose reset drops the half answer", async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'dropped-first');
    apiSim.configure({ faults: ['disconnect'] });
    const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'drop the first' });
    const jobId = String(inv.body.job_id);
    const job = await settleJob(app, ws.key, jobId, 30_000);
    expect(job.status, String(job.failedReason)).toBe('completed');
    await expectTakenOver(ws, jobId, String(inv.body.trace_id), 'drop the first');
  }, 40_000);

  it('the API process killed mid-turn: once its lease lapses the worker runs the turn again, and readers show exactly the stored reply', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'api-killed');
    const [port] = await freePorts(1);
    apiSim.configure({ tokens: 40, interTokenMs: 100 });
    try {
      const child = await spawnApiProcess(app, port, { OPENAI_BASE_URL: apiSim.baseURL, OPENAI_API_KEY: 'test-key' });
      children.push(child);
      const api = makeClient(`http://127.0.0.1:${port}`);
      const inv = await api.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'survive the api' });
      expect(inv.status).toBe(202);
      const jobId = String(inv.body.job_id);
      const headers = { authorization: `Bearer ${ws.key}` };
      await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
        headers,
        until: (ev) => ev.filter((e) => dataOf(e).type === 'token').length >= 4,
        timeoutMs: 30_000,
      });
      child.kill('SIGKILL');
      const killedAt = Date.now();
      const job = await settleJob(app, ws.key, jobId, 60_000);
      expect(job.status, String(job.failedReason)).toBe('completed');
      await expectTakenOver(ws, jobId, String(inv.body.trace_id), 'survive the api');
      // The worker took over within the lease (plus its look-ups), not after an activity timeout.
      expect(workerSim.times.at(-1)! - killedAt).toBeLessThan(FIRST_TURN_LEASE_MS + 2_000);
    } finally {
      apiSim.configure({ tokens: [12, 20], interTokenMs: [10, 30] });
    }
  }, 120_000);
});
