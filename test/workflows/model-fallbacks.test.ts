import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageRowDoc } from '../../src/usage/index.js';
import { Engram } from '../../src/traces/schemas.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { createSimulation, type Simulation } from '../support/provider-sim.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { shownReply } from '../support/sse.js';
import { startTestWorker } from '../support/worker.js';

/*
 * Model fallbacks (docs/neurons.md, "Model fallbacks"): a neuron's model fails after its retries
 * and the turn goes to the next model of neuron_config.fallback_models. One OpenAI-compatible
 * simulator serves every model: `primary` and `backup` are two simulations (slow first token,
 * streamed, different text on every call) whose faults each test sets; `gone` answers 404 as an
 * endpoint does for a model it does not serve.
 */
let app: TestApp & { close(): Promise<void> };
let server: ScriptedOpenAI;
let worker: Awaited<ReturnType<typeof startTestWorker>>;
let primary: Simulation;
let backup: Simulation;

const SIM = { tokens: [8, 14] as [number, number], interTokenMs: [5, 20] as [number, number] };

beforeAll(async () => {
  server = await startScriptedOpenAI();
  primary = createSimulation({ ...SIM, firstTokenMs: [20, 80], seed: 3 });
  backup = createSimulation({ ...SIM, firstTokenMs: [20, 80], seed: 9 });
  server.setDefault((body) => {
    if (body.model === 'gone') return { status: 404, errorMessage: 'The model `gone` does not exist' };
    return (body.model === 'primary' ? primary : backup).reply(body);
  });
  app = await startTestApp({
    OPENAI_BASE_URL: server.baseURL,
    OPENAI_API_KEY: 'test-key',
    // The simulated models start answering within 80 ms; a model slower than this has a fallback answer instead.
    MODEL_FIRST_TOKEN_TIMEOUT_MS: 1_500,
  });
  worker = await startTestWorker(app);
});
afterAll(async () => {
  await worker?.stop();
  await app?.close();
  await server?.close();
});

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function neuronIn(ws: Ws, name: string, fallback_models: string[]): Promise<string> {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/primary', fallback_models, temperature: 0.9 },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String(r.body.id);
}

const streamOf = async (jobId: string) =>
  (await app.services.streams.range(app.services.jobs.streamKey(jobId), undefined, 100_000)).map((e) => e.data);
const said = (sim: Simulation, user: string) => sim.said.filter((s) => s.user === user).map((s) => s.text);
const callsTo = (model: string, user: string) =>
  server.requests.filter((r) => r.model === model && r.messages.some((m) => m.role === 'user' && m.content === user))
    .length;
const ledgerOf = (jobId: string) =>
  app.deps.db.collection<UsageRowDoc>('usage_ledger').find({ jobId, kind: 'chat' }).toArray();

async function storedReply(ws: Ws, traceId: string): Promise<string> {
  const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams.map((e) =>
    Engram.parse(e),
  );
  const replies = msgs.filter((m) => m.source_type === 'neuron');
  expect(replies).toHaveLength(1);
  expect(replies[0].metadata).toMatchObject({ model: 'openai/backup' });
  return replies[0].content.content;
}

/** Invokes, waits for the end, and checks what every fallback answer shares: the backup answered, and everything names it. */
async function answeredByBackup(ws: Ws, neuronId: string, message: string) {
  const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message });
  expect(inv.status).toBe(202);
  const jobId = String(inv.body.job_id);
  const job = await settleJob(app, ws.key, jobId, 90_000);
  expect(job.status, String(job.failedReason)).toBe('completed');
  const result = job.result as { text: string; model: string };
  // The job result names the model that answered.
  expect(result.model).toBe('openai/backup');
  const stored = await storedReply(ws, String(inv.body.trace_id));
  // The reply is the backup's one answer, exactly what a reader of the stream shows.
  expect(said(backup, message)).toEqual([stored]);
  expect(result.text).toBe(stored);
  const entries = await streamOf(jobId);
  expect(shownReply(entries)).toBe(stored);
  // The turn's stream entry names the model that answered; the failed model finished no turn.
  const progress = entries.filter((e) => e.type === 'progress');
  expect(progress).toHaveLength(1);
  expect(progress[0]).toMatchObject({ model: 'openai/backup' });
  // The ledger row of the accepted attempt names the backup; any primary row is a failed call.
  const rows = await ledgerOf(jobId);
  const accepted = rows.find((r) => r._id === `${jobId}:chat:0:${String(progress[0].attempt)}`);
  expect(accepted).toMatchObject({ provider: 'openai', model: 'backup', outcome: 'ok' });
  expect(rows.filter((r) => r.outcome === 'ok')).toHaveLength(1);
  for (const r of rows.filter((x) => x.model === 'primary')) expect(r.outcome).toBe('failed');
  expect(entries.filter((e) => e.type === 'complete')).toHaveLength(1);
  expect(entries.at(-1)?.type).toBe('complete');
  return { jobId, entries, stored, rows, progress: progress[0] };
}

describe('model fallbacks', () => {
  it('a primary that answers 5xx after its retries: the fallback answers, and the job, stream and ledger name it', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'five-hundred', ['openai/backup']);
    primary.configure({ faultRate: { '500': 1 } });
    try {
      const r = await answeredByBackup(ws, id, 'fallback after 5xx');
      // The primary was asked more than once (its retries) and never streamed: no tokens of it.
      expect(callsTo('primary', 'fallback after 5xx')).toBeGreaterThanOrEqual(3);
      expect(callsTo('backup', 'fallback after 5xx')).toBe(1);
      expect(r.rows.filter((x) => x.model === 'primary')).toHaveLength(0);
      // The backup's attempt is newer than every attempt of the primary and starts with the turn's reset.
      const resets = r.entries.filter((e) => e.type === 'reset');
      expect(resets.at(-1)).toMatchObject({ turn: 0, attempt: r.progress.attempt });
      expect(r.entries.filter((e) => e.type === 'token').every((t) => t.attempt === r.progress.attempt)).toBe(true);
    } finally {
      primary.configure({ faultRate: undefined });
    }
  }, 120_000);

  it('a primary that breaks mid-stream: the turn is reset and only the fallback answer is shown and stored', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'mid-stream', ['openai/backup']);
    primary.configure({ faultRate: { disconnect: 1 } });
    try {
      const r = await answeredByBackup(ws, id, 'fallback mid-stream');
      // The primary did stream part of its answers before each break.
      const primaryTexts = said(primary, 'fallback mid-stream');
      expect(primaryTexts.length).toBeGreaterThanOrEqual(3);
      const reset = r.entries.findIndex((e) => e.type === 'reset' && e.attempt === r.progress.attempt);
      expect(reset).toBeGreaterThan(0);
      expect(r.entries.slice(0, reset).some((e) => e.type === 'token')).toBe(true);
      // After the fallback's reset, only its tokens: the final text holds nothing of the primary's.
      const after = r.entries.slice(reset).filter((e) => e.type === 'token');
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((t) => t.attempt === r.progress.attempt)).toBe(true);
      expect(after.map((t) => t.text).join('')).toBe(r.stored);
      for (const t of primaryTexts) expect(r.stored.includes(t.split(' ')[0]!)).toBe(false);
      // The primary's broken calls were billed (estimated), each under its own attempt; the backup's row is the answer.
      expect(r.rows.filter((x) => x.model === 'primary').length).toBeGreaterThanOrEqual(1);
    } finally {
      primary.configure({ faultRate: undefined });
    }
  }, 120_000);

  it("a 429 whose Retry-After exceeds the run's patience goes to the fallback at once, without waiting", async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'rate-limited', ['openai/backup']);
    primary.configure({ faultRate: { '429': 1 }, retryAfterS: 120 });
    try {
      const started = Date.now();
      await answeredByBackup(ws, id, 'fallback after 429');
      expect(callsTo('primary', 'fallback after 429')).toBe(1);
      expect(Date.now() - started).toBeLessThan(60_000); // far from the 120 s the provider asked for
    } finally {
      primary.configure({ faultRate: undefined, retryAfterS: undefined });
    }
  }, 120_000);

  it('a primary with no first token in time: its call is abandoned and the fallback answers', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'slow-start', ['openai/backup']);
    primary.configure({ firstTokenMs: 20_000 });
    try {
      const started = Date.now();
      await answeredByBackup(ws, id, 'fallback after a silent model');
      expect(callsTo('primary', 'fallback after a silent model')).toBe(1);
      expect(Date.now() - started).toBeLessThan(15_000); // the primary would have started at 20 s
      // The abandoned call was closed, not left to stream into nothing.
      expect(server.disconnects).toBeGreaterThanOrEqual(1);
    } finally {
      primary.configure({ firstTokenMs: [20, 80] });
    }
  }, 120_000);

  it('an unavailable model in the chain is passed over at once; the next one answers', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'unavailable', ['openai/gone', 'openai/backup']);
    primary.configure({ faultRate: { '400': 1 } });
    try {
      await answeredByBackup(ws, id, 'skip the gone model');
      expect(callsTo('primary', 'skip the gone model')).toBe(1);
      expect(callsTo('gone', 'skip the gone model')).toBe(1);
    } finally {
      primary.configure({ faultRate: undefined });
    }
  }, 120_000);

  it("a map item's neuron whose model fails: the item is answered by the fallback", async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'mapped', ['openai/backup']);
    const graph = {
      nodes: [
        { id: 's', type: 'start' },
        { id: 'm', type: 'map', data: { items: 'input.words', neuron_id: id, message: '{{ item }}' } },
        { id: 'o', type: 'output' },
      ],
      edges: [
        { source: 's', target: 'm' },
        { source: 'm', target: 'o' },
      ],
    };
    const p = await app.post('/v1/pathways', ws.key, { name: 'map-fallback', pathway_graph: graph }, ws.brainHeaders);
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    primary.configure({ faultRate: { '400': 1 } });
    try {
      const r = await app.post(
        `/v1/pathways/${String(p.body.id)}/execute`,
        ws.key,
        { input: { words: ['map item one', 'map item two'] } },
        ws.brainHeaders,
      );
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      const job = await settleJob(app, ws.key, String(r.body.job_id), 90_000);
      expect(job.status, String(job.failedReason)).toBe('completed');
      const output = (job.result as { output: string[] }).output;
      expect(output).toEqual([said(backup, 'map item one')[0], said(backup, 'map item two')[0]]);
      expect(callsTo('primary', 'map item one')).toBe(1);
    } finally {
      primary.configure({ faultRate: undefined });
    }
  }, 120_000);

  it('every model failing: the run fails naming each model and its error', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuronIn(ws, 'all-fail', ['openai/gone']);
    primary.configure({ faultRate: { '500': 1 } });
    try {
      const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'nothing answers' });
      const jobId = String(inv.body.job_id);
      const job = await settleJob(app, ws.key, jobId, 90_000);
      expect(job.status).toBe('failed');
      const reason = String(job.failedReason);
      expect(reason).toMatch(/openai\/primary: .*500/);
      expect(reason).toMatch(/openai\/gone: .*404.*does not exist/);
      const entries = await streamOf(jobId);
      expect(entries.at(-1)).toMatchObject({ type: 'error', error: 'failed' });
      expect(String(entries.at(-1)?.message)).toContain('openai/gone');
      expect((await ledgerOf(jobId)).filter((r) => r.outcome === 'ok')).toHaveLength(0);
    } finally {
      primary.configure({ faultRate: undefined });
    }
  }, 120_000);

  it('fallback_models is validated like the model: 400 naming the entry for an unknown provider or a bad form', async () => {
    const ws = await buildWorkspace(app);
    const create = (name: string, fallback_models: unknown) =>
      app.post('/v1/neurons', ws.key, {
        name,
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/primary', fallback_models },
      });
    const unknown = await create('bad-provider', ['openai/backup', 'nope/model']);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(unknown.body.message)).toMatch(/neuron_config\.fallback_models\[1\].*nope/);
    const noModel = await create('bad-form', ['openai/']);
    expect(noModel.status).toBe(400);
    expect(String(noModel.body.message)).toMatch(/neuron_config\.fallback_models\[0\]/);
    const notList = await create('not-a-list', 'openai/backup');
    expect(notList.status).toBe(400);
    expect(String(notList.body.message)).toMatch(/fallback_models/);
    const localTypo = await create('local-typo', ['local/nope']);
    expect(localTypo.status).toBe(400);
    // An update is checked the same way.
    const id = await neuronIn(ws, 'updated', ['openai/backup']);
    const upd = await app.put(`/v1/neurons/${id}`, ws.key, { neuron_config: { fallback_models: ['zzz/x'] } });
    expect(upd.status).toBe(400);
    expect(String(upd.body.message)).toMatch(/neuron_config\.fallback_models\[0\]/);
    // A valid chain is kept as written.
    const got = await app.get(`/v1/neurons/${id}`, ws.key);
    expect((got.body.neuron_config as { fallback_models: string[] }).fallback_models).toEqual(['openai/backup']);
  });
});
