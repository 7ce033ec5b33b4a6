/**
 * A worker SIGKILLed while a pathway has three parallel http branches and a map of 20 neuron runs
 * in flight: a new worker finishes the run, every branch and every item done exactly once. The
 * receiver counts the http node's idempotency keys (a request retried after the kill carries the
 * same key); the map's child jobs are counted through the jobs list.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { spawnWorkerProcess } from '../support/worker.js';

let app: TestApp & { close(): Promise<void> };
let llm: ScriptedOpenAI;
let receiver: Server;
let receiverUrl = '';
const children: ChildProcess[] = [];
/** Requests the receiver got, by Idempotency-Key. */
const byKey = new Map<string, number>();

const workerEnv = () => ({
  OPENAI_BASE_URL: llm.baseURL,
  OPENAI_API_KEY: 'test-key',
  OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
});

beforeAll(async () => {
  llm = await startScriptedOpenAI();
  // Each item's model call takes a while, so items are in flight when the worker dies.
  llm.setDefault((body) => {
    const last = body.messages.at(-1)?.content;
    return { text: `done ${typeof last === 'string' ? last : ''}`, firstTokenMs: 1200 };
  });
  receiver = createServer((req, res) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    byKey.set(key, (byKey.get(key) ?? 0) + 1);
    // Slow answers: the branches are still waiting on the receiver when the worker dies.
    setTimeout(
      () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url })),
      1500,
    );
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const addr = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  app = await startTestApp({
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'test-key',
    OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'],
  });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app?.close();
  await llm?.close();
  await new Promise((r) => receiver?.close(r));
});

async function spawnWorker(): Promise<ChildProcess> {
  const child = await spawnWorkerProcess(app, workerEnv());
  children.push(child);
  return child;
}

describe('pathway durability', () => {
  it('a worker killed with three http branches and a map of 20 items in flight: every branch and item done exactly once', async () => {
    const ws = await buildWorkspace(app);
    const neuron = await app.post('/v1/neurons', ws.key, {
      name: 'item-worker',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(neuron.status, neuron.text).toBe(201);
    const http = (id: string) => ({
      id,
      type: 'http',
      data: { url: `${receiverUrl}/${id}`, timeout_ms: 3000, retry: { max_attempts: 5, initial_interval_ms: 200 } },
    });
    const graph = {
      nodes: [
        { id: 'start', type: 'start' },
        http('a'),
        http('b'),
        http('c'),
        {
          id: 'items',
          type: 'map',
          data: {
            items: 'input.items',
            neuron_id: String(neuron.body.id),
            message: 'item {{ item }}',
            concurrency: 10,
          },
        },
        { id: 'all', type: 'join' },
        { id: 'out', type: 'output' },
      ],
      edges: [
        ...['a', 'b', 'c', 'items'].map((t) => ({ source: 'start', target: t })),
        ...['a', 'b', 'c', 'items'].map((s) => ({ source: s, target: 'all' })),
        { source: 'all', target: 'out' },
      ],
    };
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'durable-fan-out', pathway_graph: graph },
      ws.brainHeaders,
    );
    expect(p.status, p.text).toBe(201);

    const first = await spawnWorker();
    const items = Array.from({ length: 20 }, (_, i) => i + 1);
    const r = await app.post(
      `/v1/pathways/${String(p.body.id)}/execute`,
      ws.key,
      { input: { items } },
      ws.brainHeaders,
    );
    expect(r.status, r.text).toBe(202);
    const jobId = String(r.body.job_id);

    // Kill once the three requests are out and some items' model calls have started.
    const t0 = Date.now();
    while (!(byKey.size >= 3 && llm.requests.length >= 5)) {
      if (Date.now() - t0 > 60_000)
        throw new Error(`never in flight: ${byKey.size} requests, ${llm.requests.length} model calls`);
      await new Promise((res) => setTimeout(res, 50));
    }
    first.kill('SIGKILL');
    await new Promise((res) => setTimeout(res, 500));
    await spawnWorker();

    let job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    while (job.status !== 'completed' && job.status !== 'failed') {
      if (Date.now() - t0 > 150_000) throw new Error(`job still ${job.status}`);
      await new Promise((res) => setTimeout(res, 250));
      job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    }
    expect(job.failedReason ?? null).toBeNull();
    expect(job.status).toBe('completed');
    const result = job.result as { output: Record<string, unknown> };
    // Each branch arrived once at the join; the map's results are in item order.
    expect(Object.keys(result.output).sort()).toEqual(['a', 'b', 'c', 'items']);
    const mapped = result.output.items as string[];
    expect(mapped).toHaveLength(20);
    mapped.forEach((reply, i) => expect(String(reply)).toContain(`item ${i + 1}`));
    // Three http nodes, three idempotency keys: a request repeated after the kill carried its key.
    const keys = [...byKey.keys()].filter((k) => k.startsWith(`${jobId}:`));
    expect(keys.sort()).toEqual([`${jobId}:a:1`, `${jobId}:b:1`, `${jobId}:c:1`]);
    // Twenty child jobs, each completed once.
    const listed = await app.get<{ jobs: { job_id: string; status: string }[] }>(
      `/v1/jobs?parent_job_id=${jobId}&limit=100`,
      ws.key,
    );
    expect(listed.body.jobs).toHaveLength(20);
    expect(listed.body.jobs.every((j) => j.status === 'completed')).toBe(true);
    // An item's model turn is a local activity that claims its attempt in the job stream: a turn the
    // killed worker had started ran again as attempt 2 behind a reset, and each item's stream, read
    // as a client reads it (a reset drops the turn's older tokens), holds its reply exactly once.
    let retried = 0;
    for (const child of listed.body.jobs) {
      const entries = await app.deps.streams.range(app.deps.streams.keys.job(child.job_id), undefined, 10_000);
      let text = '';
      let current = 1;
      for (const { data } of entries) {
        if (data.type === 'reset') {
          current = Number(data.attempt);
          text = '';
          retried++;
        } else if (data.type === 'token') {
          expect(data.attempt).toBe(current);
          text += String(data.text);
        }
      }
      expect(entries.at(-1)?.data.type).toBe('complete');
      expect(text).toMatch(/^done item \d+$/);
    }
    expect(retried).toBeGreaterThan(0);
  }, 180_000);
});
