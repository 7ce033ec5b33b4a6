/**
 * A tool call waiting for a person survives worker deaths: a worker SIGKILLed while the call
 * waits loses no answer (a new worker takes the approval), and a worker SIGKILLed after the
 * approval, while the tool's request is in flight, does not run the tool twice: the call is
 * retried on the next worker under the same Idempotency-Key, which the tool server (as a real
 * idempotent API does) executes once. The tool server counts raw requests and executions.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { startProviderSim, type ProviderSim } from '../support/provider-sim.js';
import { spawnWorkerProcess } from '../support/worker.js';

let app: TestApp & { close(): Promise<void> };
let sim: ProviderSim;
let receiver: Server;
let receiverUrl = '';
const children: ChildProcess[] = [];
/** Every request the tool server got, and what it executed (once per Idempotency-Key). */
const requests: { path: string; key: string }[] = [];
const executed = new Map<string, number>();
/** How long the tool server holds a request before answering (the window the kill falls in). */
const HOLD_MS = 4_000;

beforeAll(async () => {
  sim = await startProviderSim({ firstTokenMs: [20, 80], interTokenMs: 5, tokens: [3, 6] });
  receiver = createServer((req, res) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    requests.push({ path: req.url ?? '', key });
    // The side effect happens once per key; a repeated request gets the first outcome.
    if (!executed.has(key)) executed.set(key, executed.size + 1);
    const order = executed.get(key)!;
    setTimeout(() => {
      if (!res.destroyed)
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ booked: true, order }));
    }, HOLD_MS);
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  app = await startTestApp({
    OPENAI_BASE_URL: sim.baseURL,
    OPENAI_API_KEY: 'test-key',
    OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'],
  });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app?.close();
  await sim?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

async function spawnWorker(): Promise<ChildProcess> {
  const child = await spawnWorkerProcess(app, {
    OPENAI_BASE_URL: sim.baseURL,
    OPENAI_API_KEY: 'test-key',
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
  });
  children.push(child);
  return child;
}
async function kill(child: ChildProcess): Promise<void> {
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}
async function until(what: string, done: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('tool approval durability', () => {
  it('a worker killed while the call waits, and one killed right after the approval with the tool in flight: the tool runs exactly once', async () => {
    const ws = await buildWorkspace(app);
    const reflex = await app.post('/v1/reflexes', ws.key, {
      name: 'booking',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: {
        http_tools: [
          {
            name: 'book_flight',
            description: 'Books a flight',
            method: 'POST',
            url: `${receiverUrl}/book`,
            parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
          },
        ],
      },
    });
    expect(reflex.status, reflex.text).toBe(201);
    const neuron = await app.post('/v1/neurons', ws.key, {
      name: 'travel-agent',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim', tool_approval: { tools: ['book_flight'] } },
    });
    expect(neuron.status, neuron.text).toBe(201);
    await app.post(`/v1/neurons/${String(neuron.body.id)}/reflexes`, ws.key, { reflex_id: reflex.body.id });
    sim.configure({
      toolCalls: (body) =>
        body.messages.some((m) => m.role === 'tool') ? null : [{ name: 'book_flight', arguments: { to: 'Lisbon' } }],
    });

    const first = await spawnWorker();
    const inv = await app.post(`/v1/neurons/${String(neuron.body.id)}/invoke`, ws.key, {
      message: 'Book me to Lisbon',
    });
    expect(inv.status, inv.text).toBe(202);
    const jobId = String(inv.body.job_id);
    let interventionId = '';
    await until('the call to wait', async () => {
      const list = await app.get<{ interventions: { id: string; kind: string }[] }>(
        `/v1/interventions?job_id=${jobId}&status=pending&brain_scope=all`,
        ws.key,
      );
      interventionId = list.body.interventions.find((i) => i.kind === 'tool_call')?.id ?? '';
      const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
      return Boolean(interventionId) && job.status === 'waiting';
    });

    // Killed while the call waits: the next worker takes the answer.
    await kill(first);
    const second = await spawnWorker();
    expect(requests).toHaveLength(0);
    const approved = await app.post(`/v1/interventions/${interventionId}/respond`, ws.key, { action: 'approve' });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.status).toBe('approved');

    // Killed right after the approval, while the tool server holds the booking request.
    await until('the booking request', () => requests.length >= 1, 30_000);
    await kill(second);
    await spawnWorker();

    let job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    await until(
      'the run to end',
      async () => {
        job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
        return job.status === 'completed' || job.status === 'failed';
      },
      120_000,
    );
    expect(job.failedReason ?? null).toBeNull();
    expect(job.status).toBe('completed');
    // One call, one key: the request repeated after the kill carried the same Idempotency-Key and
    // the booking was made once; the run's result is that booking's.
    const keys = new Set(requests.map((r) => r.key));
    expect([...keys]).toEqual([expect.stringMatching(new RegExp(`^${jobId}:0:`)) as string]);
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(executed.size).toBe(1);
    const result = (job.result as { toolCalls: { name: string; result: string }[] }).toolCalls;
    expect(result).toEqual([expect.objectContaining({ name: 'book_flight' })]);
    expect(result[0].result).toContain('"booked":true');
    // The answer was recorded once, and the job stream holds one tool result.
    const rec = await app.get(`/v1/interventions/${interventionId}`, ws.key);
    expect(rec.body).toMatchObject({ status: 'approved', action: 'approve' });
    const entries = await app.deps.streams.range(app.deps.streams.keys.job(jobId), undefined, 10_000);
    expect(entries.filter((e) => e.data.type === 'tool')).toHaveLength(1);
    expect(entries.filter((e) => e.data.type === 'intervention_answered')).toHaveLength(1);
    expect(entries.at(-1)?.data.type).toBe('complete');
  }, 240_000);
});
