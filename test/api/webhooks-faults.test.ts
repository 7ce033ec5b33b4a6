/**
 * Webhook delivery across process death (docs/webhooks.md, "Delivery guarantees"): one API process
 * and one worker process (real, spawned as `npm run up` runs them) serve 50 runs that end completed
 * or failed; while they end, the worker and then the API are SIGKILLed, then both are started again.
 * Every job's end reaches each subscribed endpoint, each (job, endpoint) under one `webhook-id`, and
 * no `webhook-id` answered 2xx is sent again. The test process follows nothing itself
 * (WEBHOOK_OUTBOX_FOLLOW=false): every delivery comes from the spawned processes' followers.
 * Loopback only; bounded in count (50 runs) and time.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../scripts/embedded.js';
import { buildWorkspace, makeClient, startTestApp, type TestApp, type TestClient } from '../support/app.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';
import { spawnApiProcess, spawnWorkerProcess } from '../support/worker.js';

const RUNS = 50;

let app: TestApp & { close(): Promise<void> };
let llm: ScriptedOpenAI;
let rx: WebhookReceiver;
let port: number;
let env: Record<string, string>;
const children = new Set<ChildProcess>();

const track = (c: ChildProcess) => {
  children.add(c);
  // WEBHOOK_FAULTS_LOG=<file>: the children's output goes there (diagnosing a failure).
  const file = process.env.WEBHOOK_FAULTS_LOG;
  if (file) for (const s of [c.stdout, c.stderr]) s?.on('data', (b: Buffer) => appendFileSync(file, b));
  c.once('exit', () => children.delete(c));
  return c;
};
const kill = (c: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once('exit', () => resolve());
    c.kill('SIGKILL');
  });

beforeAll(async () => {
  rx = await startWebhookReceiver();
  llm = await startScriptedOpenAI();
  // `ok-…` streams an answer over about a second; `fail-…` thinks a moment, then the provider refuses it (the run fails).
  llm.setDefault((body) => {
    const last = body.messages.filter((m) => m.role === 'user').at(-1);
    const text = typeof last?.content === 'string' ? last.content : '';
    return text.startsWith('fail')
      ? { hangMs: 1000 + Math.floor(Math.random() * 3000), status: 400, errorMessage: 'scripted refusal' }
      : { text: 'a short answer streamed word by word to the end', paceMs: 100 + Math.floor(Math.random() * 300) };
  });
  env = {
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'test-key',
    // Both processes open the endpoints' sealed secrets with the same key.
    SECRETS_KEY: `k1:${randomBytes(32).toString('base64')}`,
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    WEBHOOK_RETRY_INITIAL_MS: '100',
    WEBHOOK_OUTBOX_POLL_MS: '200',
    WORKSPACE_MAX_ACTIVE_RUNS: String(RUNS * 2),
    // The worker runs every model turn (the API's own first turn is another test's subject).
    FIRST_TURN_IN_API: 'false',
  };
  app = await startTestApp({
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'test-key',
    OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'],
    WEBHOOK_OUTBOX_FOLLOW: false,
  });
  [port] = await freePorts(1);
  const [api, worker] = await Promise.all([spawnApiProcess(app, port, env), spawnWorkerProcess(app, env)]);
  track(api);
  track(worker);
}, 180_000);

afterAll(async () => {
  await Promise.all([...children].map(kill));
  await app?.close();
  await llm?.close();
  await rx?.close();
});

describe('webhooks survive the processes that send them', () => {
  it('the worker and then the API are SIGKILLed while 50 jobs end: after restart every end reaches each subscribed endpoint once', async () => {
    const api: TestClient = makeClient(`http://127.0.0.1:${port}`);
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const neuron = await api.post<{ id: string }>('/v1/neurons', ws.key, {
      name: 'hooked',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/scripted' },
    });
    expect(neuron.status, neuron.text).toBe(201);
    const subscribed = ['/a', '/b'];
    for (const path of [...subscribed, '/waiting-only']) {
      const r = await api.post('/v1/webhook-endpoints', admin, {
        url: rx.base + path,
        events: path === '/waiting-only' ? ['job.waiting'] : ['job.completed', 'job.failed'],
      });
      expect(r.status, r.text).toBe(201);
    }

    // 50 runs, started 60 ms apart so that their ends spread over the kills.
    const jobs: { id: string; fails: boolean }[] = [];
    for (let i = 0; i < RUNS; i++) {
      const fails = i % 2 === 1;
      const inv = await api.post<{ job_id: string }>(`/v1/neurons/${neuron.body.id}/invoke`, ws.key, {
        message: `${fails ? 'fail' : 'ok'}-${i}`,
      });
      expect(inv.status, inv.text).toBe(202);
      jobs.push({ id: inv.body.job_id, fails });
      await new Promise((r) => setTimeout(r, 60));
    }

    // Some ends are out; kill the worker (the receiver holds its answers meanwhile, so that a
    // request it answered 2xx is recorded before the kill), then the API 300 ms later.
    await until(
      'the first deliveries',
      async () => ({
        received: rx.received.length,
        jobs: (await api.get<{ jobs: { status: string }[] }>('/v1/jobs?limit=100', ws.key)).body.jobs?.map(
          (j) => j.status,
        ),
      }),
      (v) => v.received >= 10,
      60_000,
    );
    const [apiProc, workerProc] = [...children];
    const endedAtKill =
      (await api.get<{ jobs: { status: string }[] }>('/v1/jobs?limit=100', ws.key)).body.jobs?.filter(
        (j) => j.status === 'completed' || j.status === 'failed',
      ).length ?? 0;
    // The hold starts 1.5 s before the kill: an answer given before it has had that long to be
    // recorded as delivered (two store writes, slow on a loaded machine but never that slow).
    rx.hold();
    await new Promise((r) => setTimeout(r, 1500));
    await kill(workerProc);
    // The receiver sees the dead worker's connections close before it answers what it held (an
    // answer written to a connection whose close it has not read yet would count as answered).
    await new Promise((r) => setTimeout(r, 500));
    rx.release();
    await new Promise((r) => setTimeout(r, 300));
    await kill(apiProc);
    const beforeRestart = rx.received.length;

    // Both start again on the same store, Redis and Temporal.
    const [api2, worker2] = await Promise.all([spawnApiProcess(app, port, env), spawnWorkerProcess(app, env)]);
    track(api2);
    track(worker2);

    // Every run ends (the list is read again until it shows it; an answer that is not a list, while
    // the new API warms up, is read again).
    const statuses = await until(
      'every run to end',
      async () => {
        const r = await api.get<{ jobs?: { job_id: string; status: string }[] }>('/v1/jobs?limit=100', ws.key);
        return new Map((r.body?.jobs ?? []).map((j) => [j.job_id, j.status]));
      },
      (m) => jobs.every((j) => m.get(j.id) === 'completed' || m.get(j.id) === 'failed'),
      150_000,
    );
    for (const j of jobs) expect(statuses.get(j.id), j.id).toBe(j.fails ? 'failed' : 'completed');

    const want = (path: string) => {
      const got = new Set(
        rx
          .at(path)
          .filter((r) => r.status === 200)
          .map((r) => r.jobId),
      );
      return jobs.filter((j) => !got.has(j.id));
    };
    for (const path of subscribed)
      await until(
        `every end at ${path}`,
        () => want(path).map((j) => j.id),
        (missing) => missing.length === 0,
        120_000,
      );

    for (const path of subscribed) {
      const got = rx.at(path);
      for (const j of jobs) {
        const mine = got.filter((r) => r.jobId === j.id);
        // One event per end, under one webhook-id, of the job's own outcome.
        expect(new Set(mine.map((r) => r.webhookId)).size, `${path} ${j.id}`).toBe(1);
        expect(new Set(mine.map((r) => r.type)), `${path} ${j.id}`).toEqual(
          new Set([j.fails ? 'job.failed' : 'job.completed']),
        );
      }
      // No webhook-id the receiver answered 2xx came again.
      const answered = new Map<string, number>();
      for (const r of got) answered.set(r.webhookId, (answered.get(r.webhookId) ?? 0) + (r.status === 200 ? 1 : 0));
      expect([...answered].filter(([, n]) => n > 1)).toEqual([]);
    }
    // The two endpoints have different ids for the same end; the unsubscribed one got nothing.
    const idsA = new Set(rx.at('/a').map((r) => r.webhookId));
    expect(rx.at('/b').some((r) => idsA.has(r.webhookId))).toBe(false);
    expect(rx.at('/waiting-only')).toEqual([]);
    // The kills landed while jobs ended: some deliveries came before them, some only after the restart.
    expect(beforeRestart).toBeGreaterThan(0);
    expect(endedAtKill).toBeLessThan(RUNS);
    if (process.env.WEBHOOK_FAULTS_LOG)
      appendFileSync(
        process.env.WEBHOOK_FAULTS_LOG,
        `\nSUMMARY ended at kill: ${endedAtKill}/${RUNS}; received before restart: ${beforeRestart}; in all: ${rx.received.length} (answered 2xx: ${rx.received.filter((r) => r.status === 200).length})\n`,
      );
    expect(rx.received.length).toBeGreaterThan(beforeRestart);
  }, 420_000);
});
