import type { ChildProcess } from 'node:child_process';
import type { EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../scripts/embedded.js';
import { Job } from '../../src/jobs/schemas.js';
import { Engram } from '../../src/traces/schemas.js';
import { buildWorkspace, makeClient, startTestApp, type TestApp, type TestClient } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { startProviderSim, type ProviderSim } from '../support/provider-sim.js';
import { dataOf, readSse, shownReply } from '../support/sse.js';
import { spawnApiProcess, spawnWorkerProcess } from '../support/worker.js';

/*
 * Stateless replicas: two API processes and two worker processes on one store, one Redis (one
 * server, or the cluster in the `cluster` project) and one Temporal, as a deployment runs them
 * behind a load balancer. A client that alternates between the two APIs for every step sees one
 * platform: a run invoked on one is streamed from the other and resumed there after a cut, a write
 * on one is found by a search on the other at once, a cancel and an approval sent to the other API
 * reach the run. Nothing a request needs lives in one process's memory. The provider is the
 * simulator (slow, a different answer on every call), so a spliced or doubled answer would show.
 */
let app: TestApp & { close(): Promise<void> };
let sim: ProviderSim;
let apis: [TestClient, TestClient];
const children: ChildProcess[] = [];

beforeAll(async () => {
  sim = await startProviderSim({ tokens: [30, 40], interTokenMs: [20, 40], firstTokenMs: [50, 150] });
  // The in-process app only provides the shared configuration (store, Redis prefix, task queue) and the workspace.
  app = await startTestApp({ OPENAI_BASE_URL: sim.baseURL, OPENAI_API_KEY: 'test-key' });
  const env = { OPENAI_BASE_URL: sim.baseURL, OPENAI_API_KEY: 'test-key' };
  const ports = await freePorts(2);
  const started = await Promise.allSettled([
    spawnApiProcess(app, ports[0], env),
    spawnApiProcess(app, ports[1], env),
    spawnWorkerProcess(app, env),
    spawnWorkerProcess(app, env),
  ]);
  for (const s of started) if (s.status === 'fulfilled') children.push(s.value);
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  apis = [makeClient(`http://127.0.0.1:${ports[0]}`), makeClient(`http://127.0.0.1:${ports[1]}`)];
}, 180_000);

afterAll(async () => {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGTERM');
        }),
    ),
  );
  await app?.close();
  await sim?.close();
});

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
const auth = (ws: Ws) => ({ authorization: `Bearer ${ws.key}` });

async function neuronOn(api: TestClient, ws: Ws, name: string): Promise<string> {
  const r = await api.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim-model', temperature: 0.9 },
  });
  expect(r.status, r.text).toBe(201);
  return String(r.body.id);
}

describe('two APIs and two workers are one platform', () => {
  it('a run invoked on one API streams from the other, and a reader cut off resumes on the first with Last-Event-ID', async () => {
    const [a, b] = apis;
    const ws = await buildWorkspace(app);
    const neuronId = await neuronOn(a, ws, 'replicated');
    const inv = await b.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'tell me something' });
    expect(inv.status, inv.text).toBe(202);
    const jobId = String(inv.body.job_id);
    // Read on A until a few tokens came, then the connection drops.
    const first = await readSse(`${a.url}/v1/jobs/${jobId}/stream`, {
      headers: auth(ws),
      timeoutMs: 30_000,
      until: (ev) => ev.filter((e) => dataOf(e).type === 'token').length >= 5,
    });
    expect(first.ended).toBe(false);
    const cursor = first.events.at(-1)!.id!;
    // The reconnect lands on B, which has never seen this reader.
    const rest = await readSse(`${b.url}/v1/jobs/${jobId}/stream`, {
      headers: { ...auth(ws), 'last-event-id': cursor },
      timeoutMs: 30_000,
    });
    expect(rest.ended).toBe(true);
    const all: EventSourceMessage[] = [...first.events, ...rest.events];
    const ids = all.map((e) => e.id!);
    expect(new Set(ids).size).toBe(ids.length); // nothing twice
    // …and nothing missed: the readers got the stream the processes wrote into this project's Redis.
    const stored = await app.deps.streams.range(app.deps.streams.keys.job(jobId), undefined, 10_000);
    expect(ids).toEqual(stored.map((e) => e.id));
    expect(dataOf(all.at(-1)!).type).toBe('complete');
    expect(all.filter((e) => ['complete', 'error'].includes(String(dataOf(e).type)))).toHaveLength(1);
    // What the reader shows is exactly the stored reply (read through A), which is the one answer the provider gave.
    const job = await settleJob(a, ws.key, jobId);
    expect(job.status).toBe('completed');
    const engrams = (await a.get<{ engrams: unknown[] }>(`/v1/traces/${String(inv.body.trace_id)}/messages`, ws.key))
      .body.engrams;
    const reply = engrams.map((e) => Engram.parse(e)).find((m) => m.source_type === 'neuron')!;
    expect(shownReply(all.map(dataOf))).toBe(reply.content.content);
    expect(sim.said.filter((s) => s.text === reply.content.content)).toHaveLength(1);
  });

  it('a write on either API is found at once by a search on the other', async () => {
    const ws = await buildWorkspace(app);
    for (let i = 0; i < 4; i++) {
      const [writer, reader] = i % 2 === 0 ? apis : [apis[1], apis[0]];
      const name = `replica write ${i} ${ws.workspaceId.slice(0, 8)}`;
      const id = await neuronOn(writer, ws, name);
      const found = await reader.post(
        '/v1/search',
        ws.key,
        { query: `neurons/${name}`, search_mode: 'lexical' },
        ws.brainHeaders,
      );
      expect(found.status, found.text).toBe(200);
      expect((found.body as { results: { id: string }[] }).results[0]?.id).toBe(id);
    }
  });

  it('a cancel sent to the other API stops the run: its stream on the first ends with error cancelled', async () => {
    const [a, b] = apis;
    const ws = await buildWorkspace(app);
    const neuronId = await neuronOn(b, ws, 'slow');
    sim.configure({ tokens: 400, interTokenMs: 40 });
    try {
      const inv = await a.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'go on and on' });
      const jobId = String(inv.body.job_id);
      let cancel: Promise<number> | undefined;
      const sse = await readSse(`${a.url}/v1/jobs/${jobId}/stream`, {
        headers: auth(ws),
        timeoutMs: 30_000,
        until: (ev) => {
          if (!cancel && ev.some((e) => dataOf(e).type === 'token'))
            cancel = b.post(`/v1/jobs/${jobId}/cancel`, ws.key).then((r) => r.status);
          return false;
        },
      });
      expect(await cancel).toBe(200);
      expect(sse.ended).toBe(true);
      expect(dataOf(sse.events.at(-1)!)).toMatchObject({ type: 'error', error: 'cancelled' });
      expect(sse.events.filter((e) => dataOf(e).type === 'token').length).toBeLessThan(400);
      const job = Job.parse((await b.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
      expect(job.status).toBe('failed');
      expect(job.failedReason).toMatch(/cancel/i);
    } finally {
      sim.configure({ tokens: [30, 40], interTokenMs: [20, 40] });
    }
  });

  it('an approval sent to the other API resumes the run waiting on the first', async () => {
    const [a, b] = apis;
    const ws = await buildWorkspace(app);
    const pathway = {
      nodes: [
        { id: 's', type: 'start' },
        { id: 'h', type: 'human', data: { title: 'ship?' } },
        { id: 'y', type: 'output', data: { value: '"approved"' } },
        { id: 'n', type: 'output', data: { value: '"rejected"' } },
      ],
      edges: [
        { source: 's', target: 'h' },
        { source: 'h', target: 'y', handle: 'approve' },
        { source: 'h', target: 'n', handle: 'reject' },
      ],
    };
    const started = await a.post('/v1/jobs', ws.key, { pathway }, ws.brainHeaders);
    expect(started.status, started.text).toBe(200);
    const jobId = String(started.body.job_id);
    let interventionId = '';
    for (let i = 0; i < 300 && !interventionId; i++) {
      const job = Job.parse((await b.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
      if (job.status === 'waiting') interventionId = String(job.waitingFor!.interventionId);
      else await new Promise((r) => setTimeout(r, 50));
    }
    expect(interventionId).not.toBe('');
    const answer = await b.post(`/v1/interventions/${interventionId}/respond`, ws.key, { action: 'approve' });
    expect(answer.status, answer.text).toBe(200);
    const job = await settleJob(a, ws.key, jobId);
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({ output: 'approved' });
  });
});
