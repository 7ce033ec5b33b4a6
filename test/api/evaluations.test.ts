/**
 * Evaluations (docs/evaluations.md) against real services: datasets with versions, imports and
 * runs added from jobs; experiments run by a real worker with the provider simulator as the
 * model, judged, priced from the usage ledger, compared, cancelled and announced by webhook.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { lastUserText, type ScriptedRequestBody } from '../support/scripted-openai.js';
import { startProviderSim, type ProviderSim } from '../support/provider-sim.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { startTestWorker } from '../support/worker.js';

let app: TestApp & { close(): Promise<void> };
let sim: ProviderSim;
let worker: Awaited<ReturnType<typeof startTestWorker>>;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

type Body = Record<string, unknown>;
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

/**
 * The simulator's answers: a judge prompt gets a verdict; a neuron whose system prompt says
 * MODE=right answers `echo: X` with X; MODE=wrong answers `nope`; others say random words.
 */
function answer(body: ScriptedRequestBody): string | null {
  const user = lastUserText(body);
  const system = body.messages.find((m) => m.role === 'system')?.content;
  const sys = typeof system === 'string' ? system : '';
  if (user.startsWith('You are grading')) return '{"score": 0.75, "reason": "close enough"}';
  const m = /^echo: (.*)$/s.exec(user);
  if (sys.includes('MODE=right') && m) return m[1];
  if (sys.includes('MODE=wrong')) return 'nope';
  return null;
}

beforeAll(async () => {
  sim = await startProviderSim({ firstTokenMs: [20, 80], interTokenMs: [1, 5], tokens: [3, 6], text: answer });
  receiver = await startWebhookReceiver();
  app = await startTestApp({
    OPENAI_BASE_URL: sim.baseURL,
    OPENAI_API_KEY: 'test-key',
    OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'],
    WEBHOOK_OUTBOX_POLL_MS: 100,
  });
  worker = await startTestWorker(app);
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await app?.close();
  await sim?.close();
  await receiver?.close();
});

async function neuron(ws: Ws, name: string, system: string): Promise<string> {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: system },
  });
  expect(r.status, r.text).toBe(201);
  return String(r.body.id);
}

async function dataset(ws: Ws, items: Body[], name = 'ds'): Promise<Body> {
  const r = await app.post('/v1/datasets', ws.key, { name, items }, ws.brainHeaders);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

async function waitExperiment(ws: Ws, id: string, until: (e: Body) => boolean, ms = 120_000): Promise<Body> {
  const t0 = Date.now();
  for (;;) {
    const r = await app.get(`/v1/experiments/${id}`, ws.key);
    expect(r.status, r.text).toBe(200);
    if (until(r.body)) return r.body;
    if (Date.now() - t0 > ms) throw new Error(`experiment still ${String(r.body.status)}: ${r.text}`);
    await new Promise((res) => setTimeout(res, 300));
  }
}
const ended = (e: Body) => ['completed', 'failed', 'cancelled'].includes(String(e.status));

async function items(ws: Ws, id: string): Promise<Body[]> {
  const r = await app.get<{ items: Body[] }>(`/v1/experiments/${id}/items?limit=500`, ws.key);
  expect(r.status, r.text).toBe(200);
  return r.body.items;
}

describe('datasets', () => {
  it('CRUD, one version per change to the items, any version read back', async () => {
    const ws = await buildWorkspace(app);
    const ds = await dataset(ws, [
      { input: 'a', expected: 'A' },
      { input: { q: 'b' }, metadata: { k: 1 } },
    ]);
    expect(ds).toMatchObject({ name: 'ds', version: 1, item_count: 2, brain_id: ws.brainId });
    const id = String(ds.id);

    const add = await app.post(`/v1/datasets/${id}/items`, ws.key, { input: 'c', expected: 'C' });
    expect(add.status, add.text).toBe(201);
    expect(add.body.dataset).toMatchObject({ version: 2, item_count: 3 });
    const many = await app.post(`/v1/datasets/${id}/items`, ws.key, { items: [{ input: 'd' }, { input: 'e' }] });
    expect(many.body.dataset).toMatchObject({ version: 3, item_count: 5 });
    const first = (await app.get<{ items: Body[] }>(`/v1/datasets/${id}/items`, ws.key)).body.items[0];
    const rm = await app.del(`/v1/datasets/${id}/items/${String(first.id)}`, ws.key);
    expect(rm.status, rm.text).toBe(200);
    expect(rm.body).toMatchObject({ version: 4, item_count: 4 });
    expect((await app.del(`/v1/datasets/${id}/items/${String(first.id)}`, ws.key)).status).toBe(404);

    const at = async (v?: number) =>
      (
        await app.get<{ items: Body[]; version: number; total: number }>(
          `/v1/datasets/${id}/items${v === undefined ? '' : `?version=${v}`}`,
          ws.key,
        )
      ).body;
    expect((await at(1)).items.map((i) => i.input)).toEqual(['a', { q: 'b' }]);
    expect((await at(2)).items.map((i) => i.input)).toEqual(['a', { q: 'b' }, 'c']);
    expect((await at(3)).total).toBe(5);
    const now = await at();
    expect(now.version).toBe(4);
    expect(now.items.map((i) => i.input)).toEqual([{ q: 'b' }, 'c', 'd', 'e']);
    expect(now.items[0]).toMatchObject({ metadata: { k: 1 }, added_in_version: 1, removed_in_version: null });
    const removed = (await at(3)).items[0];
    expect(removed).toMatchObject({ input: 'a', removed_in_version: 4 });
    expect((await app.get(`/v1/datasets/${id}/items?version=9`, ws.key)).status).toBe(400);
    // Paged by cursor.
    const p1 = await app.get<{ items: Body[]; next_cursor: string }>(
      `/v1/datasets/${id}/items?limit=3&cursor=first`,
      ws.key,
    );
    const p2 = await app.get<{ items: Body[] }>(
      `/v1/datasets/${id}/items?limit=3&cursor=${p1.body.next_cursor}`,
      ws.key,
    );
    expect([...p1.body.items, ...p2.body.items].map((i) => i.input)).toEqual(now.items.map((i) => i.input));

    const patched = await app.patch(`/v1/datasets/${id}`, ws.key, { description: 'capitals' });
    expect(patched.body).toMatchObject({ description: 'capitals', version: 4 });
    const list = await app.get<{ datasets: Body[] }>('/v1/datasets', ws.key, ws.brainHeaders);
    expect(list.body.datasets.map((d) => d.id)).toEqual([id]);
    expect((await app.get('/v1/datasets', ws.key)).status).toBe(400); // brain-scoped
    expect((await app.del(`/v1/datasets/${id}`, ws.key)).status).toBe(200);
    expect((await app.get(`/v1/datasets/${id}`, ws.key)).status).toBe(404);
  });

  it('bad input is a 400 naming the field', async () => {
    const ws = await buildWorkspace(app);
    const ds = await dataset(ws, []);
    const r = await app.post(`/v1/datasets/${String(ds.id)}/items`, ws.key, { expected: 'x' });
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/input/);
    const big = await app.post(`/v1/datasets/${String(ds.id)}/items`, ws.key, { input: 'x'.repeat(70_000) });
    expect(big.status).toBe(400);
    expect(big.text).toMatch(/items\[0\]/);
    const noBrain = await app.post('/v1/datasets', ws.key, { name: 'x' });
    expect(noBrain.status).toBe(400);
  });

  it('imports JSONL and CSV as one version each; errors name the line', async () => {
    const ws = await buildWorkspace(app);
    const id = String((await dataset(ws, [])).id);
    const jsonl = await app.post(`/v1/datasets/${id}/import`, ws.key, {
      format: 'jsonl',
      content: '{"input":"1+1","expected":2}\n{"input":{"q":"x"},"metadata":{"src":"j"}}\n',
    });
    expect(jsonl.status, jsonl.text).toBe(201);
    expect(jsonl.body.dataset).toMatchObject({ version: 1, item_count: 2 });
    const csv = await app.post(`/v1/datasets/${id}/import`, ws.key, {
      format: 'csv',
      content: 'input,expected,lang\n"Capital of France, please",Paris,en\n2+2,4,\n',
    });
    expect(csv.status, csv.text).toBe(201);
    expect(csv.body.dataset).toMatchObject({ version: 2, item_count: 4 });
    const all = (await app.get<{ items: Body[] }>(`/v1/datasets/${id}/items`, ws.key)).body.items;
    expect(all.map((i) => [i.input, i.expected ?? null])).toEqual([
      ['1+1', 2],
      [{ q: 'x' }, null],
      ['Capital of France, please', 'Paris'],
      ['2+2', 4],
    ]);
    expect(all[2].metadata).toEqual({ lang: 'en' });
    const bad = await app.post(`/v1/datasets/${id}/import`, ws.key, { format: 'jsonl', content: '{"input":1}\n{oops' });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/line 2/);
    expect((await app.get(`/v1/datasets/${id}`, ws.key)).body).toMatchObject({ version: 2 }); // nothing stored
  });

  it("another workspace's dataset is a 404, another brain's too; a member (no role) reads and writes", async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const id = String((await dataset(ws, [{ input: 'a' }])).id);
    for (const [m, p, b] of [
      ['GET', `/v1/datasets/${id}`, undefined],
      ['PATCH', `/v1/datasets/${id}`, { name: 'x' }],
      ['GET', `/v1/datasets/${id}/items`, undefined],
      ['POST', `/v1/datasets/${id}/items`, { input: 'x' }],
      ['DELETE', `/v1/datasets/${id}`, undefined],
    ] as const) {
      const r = await app.request(m, p, { auth: other.key, body: b });
      expect(r.status, `${m} ${p}`).toBe(404);
    }
    const brain = await app.post('/v1/brains', ws.key, { name: 'second' });
    expect(brain.status, brain.text).toBe(201);
    expect((await app.get(`/v1/datasets/${id}`, ws.key, { 'x-brain-id': String(brain.body.id) })).status).toBe(404);

    const member = await ws.jwt([]);
    const made = await app.post('/v1/datasets', member, { name: 'by member' }, ws.brainHeaders);
    expect(made.status, made.text).toBe(201);
    expect((await app.post(`/v1/datasets/${id}/items`, member, { input: 'm' })).status).toBe(201);
    expect((await app.get(`/v1/datasets/${id}/items`, member)).body.total).toBe(2);
  });

  it("adds a completed run to a dataset: its message as input, its reply as expected; another workspace's job is 404", async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'echoer', 'MODE=right');
    const inv = await app.post(`/v1/neurons/${n}/invoke`, ws.key, { message: 'echo: hello there' });
    expect(inv.status, inv.text).toBe(202);
    const jobId = String(inv.body.job_id);
    const t0 = Date.now();
    let status = '';
    while (status !== 'completed') {
      if (Date.now() - t0 > 60_000) throw new Error(`job ${status}`);
      await new Promise((r) => setTimeout(r, 200));
      status = String((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body.status);
    }
    const id = String((await dataset(ws, [])).id);
    const r = await app.post(`/v1/datasets/${id}/items/from-job`, ws.key, { job_id: jobId });
    expect(r.status, r.text).toBe(201);
    const [item] = r.body.items as Body[];
    expect(item).toMatchObject({ input: 'echo: hello there', expected: 'hello there', source_job_id: jobId });
    expect(item.metadata).toMatchObject({ source_job_id: jobId, source_kind: 'neuron' });
    const other = await buildWorkspace(app);
    const otherDs = String((await dataset(other, [])).id);
    expect((await app.post(`/v1/datasets/${otherDs}/items/from-job`, other.key, { job_id: jobId })).status).toBe(404);
  });
});

describe('experiments', () => {
  it('two neuron versions scored by exact, contains and a judge: aggregates, ledger-priced judge calls, a comparison', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'subject', 'MODE=wrong');
    const v2 = await app.put(`/v1/neurons/${n}`, ws.key, {
      neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'MODE=right' },
    });
    expect(v2.status, v2.text).toBe(200);
    const judge = await neuron(ws, 'grader', 'You grade.');
    const ds = await dataset(
      ws,
      Array.from({ length: 6 }, (_, i) => ({ input: `echo: answer ${i}`, expected: `answer ${i}` })),
    );
    const hook = await app.post('/v1/webhook-endpoints', ws.key, {
      url: `${receiver.base}/${ws.workspaceId}`,
      events: ['experiment.completed', 'experiment.failed'],
    });
    expect(hook.status, hook.text).toBe(201);
    const run = async (version: number) => {
      const r = await app.post(
        '/v1/experiments',
        ws.key,
        {
          name: `v${version}`,
          dataset_id: ds.id,
          target: { neuron_id: n, version },
          evaluators: [
            { type: 'exact' },
            { type: 'contains' },
            { type: 'judge', neuron_id: judge, rubric: 'Does the output answer the input?' },
          ],
          concurrency: 3,
        },
        ws.brainHeaders,
      );
      expect(r.status, r.text).toBe(202);
      expect(r.body).toMatchObject({ status: 'pending', dataset_version: 1, items_total: 6 });
      return String(r.body.id);
    };
    const [e1, e2] = [await run(1), await run(2)];
    const done1 = await waitExperiment(ws, e1, ended);
    const done2 = await waitExperiment(ws, e2, ended);
    expect(done1).toMatchObject({ status: 'completed', progress: 100, items_done: 6 });
    expect(done2).toMatchObject({ status: 'completed', target: { kind: 'neuron', id: n, version: 2 } });
    const a1 = done1.aggregates as Body;
    const a2 = done2.aggregates as Body;
    expect(a1).toMatchObject({ items: 6, scored: 6, failed: 0, pass_rate: 0 });
    expect(a1.mean_scores).toEqual({ exact: 0, contains: 0, judge: 0.75 });
    expect(a2).toMatchObject({ pass_rate: 1 });
    expect(a2.mean_scores).toEqual({ exact: 1, contains: 1, judge: 0.75 });
    expect(Number(a2.latency_p50_ms)).toBeGreaterThan(0);
    expect(Number(a2.latency_p95_ms)).toBeGreaterThanOrEqual(Number(a2.latency_p50_ms));
    expect(Number(a2.total_cost_usd)).toBeGreaterThan(0);
    expect(Number(a2.evaluator_cost_usd)).toBeGreaterThan(0);

    // Per item: output, scores with reasons, tokens and cost read from the ledger rows of its jobs.
    const rows = await items(ws, e2);
    expect(rows).toHaveLength(6);
    for (const [i, row] of rows.entries()) {
      expect(row).toMatchObject({ status: 'scored', output: `answer ${i}`, passed: true });
      const scores = row.scores as Body[];
      expect(scores.map((s) => s.evaluator)).toEqual(['exact', 'contains', 'judge']);
      expect(scores[2]).toMatchObject({ score: 0.75, reason: 'close enough', passed: true });
      const target = await app.deps.repos.usage.jobRows(ws.workspaceId, String(row.job_id));
      expect(target.length).toBeGreaterThan(0);
      expect(row.total_tokens).toBe(target.reduce((n, r) => n + r.totalTokens, 0));
      // The judge ran as a neuron job of its own: its model call is a ledger row of that job.
      const judged = await app.deps.repos.usage.jobRows(ws.workspaceId, String(scores[2].job_id));
      expect(judged.length).toBe(1);
      expect(Number(row.evaluator_cost_usd)).toBeCloseTo(judged[0].costNanos / 1e9, 12);
    }

    const cmp = await app.get<{ items: Body[]; experiments: Body[] }>(
      `/v1/experiments/compare?ids=${e1},${e2}`,
      ws.key,
    );
    expect(cmp.status, cmp.text).toBe(200);
    expect(cmp.body.experiments.map((e) => e.id)).toEqual([e1, e2]);
    expect(cmp.body.items).toHaveLength(6);
    for (const [i, it] of cmp.body.items.entries()) {
      expect(it.input).toBe(`echo: answer ${i}`);
      const runs = it.runs as Body[];
      expect(runs.map((r) => r.output)).toEqual(['nope', `answer ${i}`]);
      expect(it.changed).toEqual({ output: true, passed: true, score_deltas: [{ exact: 1, contains: 1, judge: 0 }] });
    }
    // An experiment's own run added to a dataset: its input is the item it ran, its output the expected.
    const kept = String((await dataset(ws, [], 'kept')).id);
    const fromRun = await app.post(`/v1/datasets/${kept}/items/from-job`, ws.key, { job_id: String(rows[0]!.job_id) });
    expect(fromRun.status, fromRun.text).toBe(201);
    expect((fromRun.body.items as Body[])[0]).toMatchObject({ input: 'echo: answer 0', expected: 'answer 0' });
    const list = await app.get<{ experiments: Body[] }>(`/v1/experiments?dataset_id=${String(ds.id)}`, ws.key);
    expect(list.body.experiments.map((e) => e.id)).toEqual([e2, e1]);

    // experiment.completed, twice (one per experiment), through the outbox.
    const t0 = Date.now();
    while (receiver.at(`/${ws.workspaceId}`).length < 2 && Date.now() - t0 < 20_000)
      await new Promise((r) => setTimeout(r, 200));
    const got = receiver.at(`/${ws.workspaceId}`);
    expect(got.map((g) => g.type)).toEqual(['experiment.completed', 'experiment.completed']);
    expect(got.map((g) => (JSON.parse(g.body) as { data: Body }).data.experiment_id).sort()).toEqual([e1, e2].sort());

    // Another workspace sees none of it.
    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/experiments/${e1}`, other.key)).status).toBe(404);
    expect((await app.get(`/v1/experiments/compare?ids=${e1},${e2}`, other.key)).status).toBe(404);
    expect((await app.post(`/v1/experiments/${e1}/cancel`, other.key)).status).toBe(404);
    expect((await app.post(`/v1/experiments/${e1}/cancel`, ws.key)).status).toBe(409);
  }, 240_000);

  it('a pathway target scored by a custom pathway evaluator that gets { input, expected, output }', async () => {
    const ws = await buildWorkspace(app);
    const pathway = async (name: string, value: string) => {
      const r = await app.post(
        '/v1/pathways',
        ws.key,
        {
          name,
          pathway_graph: {
            nodes: [
              { id: 'start', type: 'start' },
              { id: 'out', type: 'output', data: { value } },
            ],
            edges: [{ source: 'start', target: 'out' }],
          },
        },
        ws.brainHeaders,
      );
      expect(r.status, r.text).toBe(201);
      return String(r.body.id);
    };
    const doubler = await pathway('doubler', 'input.n * 2');
    const grader = await pathway(
      'grader',
      '{"score": input.output = input.expected ? 1 : 0.2, "reason": "checked " & $string(input.input.n)}',
    );
    // Item 3 expects a wrong value: the grader scores it 0.2 (below the default 0.5 threshold).
    const ds = await dataset(
      ws,
      [0, 1, 2, 3].map((n) => ({ input: { n }, expected: n === 3 ? 7 : n * 2 })),
    );
    const r = await app.post('/v1/experiments', ws.key, {
      dataset_id: ds.id,
      target: { pathway_id: doubler },
      evaluators: [
        { type: 'numeric_close', tolerance: 0.5 },
        { type: 'pathway', pathway_id: grader },
      ],
      concurrency: 2,
    });
    expect(r.status, r.text).toBe(202);
    const done = await waitExperiment(ws, String(r.body.id), ended);
    expect(done).toMatchObject({ status: 'completed', target: { kind: 'pathway', id: doubler, version: 1 } });
    expect(done.aggregates).toMatchObject({ scored: 4, pass_rate: 0.75 });
    expect((done.aggregates as Body).mean_scores).toEqual({ numeric_close: 0.75, pathway: 0.8 });
    const rows = await items(ws, String(r.body.id));
    expect(rows.map((x) => x.output)).toEqual([0, 2, 4, 6]);
    const last = (rows[3].scores as Body[])[1];
    expect(last).toMatchObject({ evaluator: 'pathway', score: 0.2, reason: 'checked 3', passed: false });
    expect(String(last.job_id)).toMatch(/^[0-9a-f-]{36}$/);
  }, 120_000);

  it('refuses bad evaluators and targets with a 400 or 404 naming them', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'x', 'MODE=right');
    const ds = String((await dataset(ws, [{ input: 'a' }])).id);
    const post = (b: Body) => app.post('/v1/experiments', ws.key, { dataset_id: ds, target: { neuron_id: n }, ...b });
    const bad = await post({ evaluators: [{ type: 'regex', pattern: '(a)\\1' }] });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/evaluators\[0\]\.pattern/);
    const schema = await post({ evaluators: [{ type: 'json_schema', schema: { $ref: '#' } }] });
    expect(schema.status).toBe(400);
    expect(schema.text).toMatch(/evaluators\[0\]\.schema/);
    expect((await post({ evaluators: [{ type: 'nope' }] })).status).toBe(400);
    expect((await post({ evaluators: [{ type: 'exact' }], dataset_version: 7 })).status).toBe(400);
    const missing = await app.post('/v1/experiments', ws.key, {
      dataset_id: ds,
      target: { neuron_id: n, version: 9 },
      evaluators: [{ type: 'exact' }],
    });
    expect(missing.status).toBe(404);
  });

  it('cancel stops an experiment: no new item starts, it stays cancelled', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'slow', 'MODE=right');
    const ds = await dataset(
      ws,
      Array.from({ length: 12 }, (_, i) => ({ input: `echo: slow ${i}`, expected: `slow ${i}` })),
    );
    sim.configure({ firstTokenMs: [1500, 2000] });
    try {
      const r = await app.post('/v1/experiments', ws.key, {
        dataset_id: ds.id,
        target: { neuron_id: n },
        evaluators: [{ type: 'exact' }],
        concurrency: 1,
      });
      expect(r.status, r.text).toBe(202);
      const id = String(r.body.id);
      await waitExperiment(ws, id, (e) => e.status === 'running' && Number(e.items_done) >= 1, 60_000);
      // A running experiment is not deleted: it is cancelled first.
      const early = await app.del(`/v1/experiments/${id}`, ws.key);
      expect(early.status, early.text).toBe(409);
      const c = await app.post(`/v1/experiments/${id}/cancel`, ws.key);
      expect(c.status, c.text).toBe(200);
      expect(c.body.status).toBe('cancelled');
      await new Promise((res) => setTimeout(res, 4_000));
      const after = await waitExperiment(ws, id, (e) => e.aggregates !== null);
      expect(after.status).toBe('cancelled');
      expect(Number(after.items_done)).toBeLessThan(12);
      // Ended, it is deleted with its item rows (another workspace's is a 404); its runs' jobs stay.
      const itemRows = await app.get<{ items: Body[] }>(`/v1/experiments/${id}/items`, ws.key);
      const kept = String(itemRows.body.items[0]!.job_id);
      const other = await buildWorkspace(app);
      expect((await app.del(`/v1/experiments/${id}`, other.key)).status).toBe(404);
      const del = await app.del(`/v1/experiments/${id}`, ws.key);
      expect(del.status, del.text).toBe(200);
      expect((await app.get(`/v1/experiments/${id}`, ws.key)).status).toBe(404);
      expect((await app.get(`/v1/experiments/${id}/items`, ws.key)).status).toBe(404);
      expect((await app.get(`/v1/jobs/${kept}`, ws.key)).status).toBe(200);
      expect((await app.del(`/v1/experiments/${id}`, ws.key)).status).toBe(404);
    } finally {
      sim.configure({ firstTokenMs: [20, 80] });
    }
  }, 120_000);
});
