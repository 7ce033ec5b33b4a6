import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { BudgetDoc } from '../../src/usage/index.js';
import type { UsageRowDoc } from '../../src/usage/index.js';
import type { CommandStartedEvent } from 'mongodb';
import { Budget, BudgetList } from '../../src/usage/index.js';
import { Intervention } from '../../src/interventions/schemas.js';
import { Job } from '../../src/jobs/schemas.js';
import { ReceptorList } from '../../src/receptors/schemas.js';
import { ShareView } from '../../src/shares/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * Budgets (docs/usage.md) against the provider simulator: spending is the usage ledger's sum,
 * checked before each model turn; the pause policy waits for an admin and resumes the run where
 * it stopped, the fail policy fails it with BUDGET_EXCEEDED.
 */
const { app, sim } = useSimPlatform({ tokens: 8, interTokenMs: 2 });
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const TOOL_PROMPT = 'use the tool to multiply six by seven';
// The model calls the calculator on the first turn of a run that asks for it; its second turn answers.
beforeAll(() =>
  sim.configure({
    toolCalls: (b) =>
      JSON.stringify(b.messages).includes('use the tool') && !b.messages.some((m) => m.role === 'tool')
        ? [{ name: 'calculator', arguments: { expression: '6*7' } }]
        : null,
  }),
);

const rowsOf = (filter: Partial<UsageRowDoc>) =>
  app.deps.db.collection<UsageRowDoc>('usage_ledger').find(filter).toArray();
const tokensOf = (rows: UsageRowDoc[]) => rows.reduce((a, r) => a + r.totalTokens, 0);
const nanosOf = (rows: UsageRowDoc[]) => rows.reduce((a, r) => a + r.costNanos, 0);

async function neuron(ws: Ws, name: string, tools?: string[]) {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/gpt-4o-mini', ...(tools ? { tools } : {}) },
  });
  expect(r.status).toBe(201);
  return String(r.body.id);
}

async function invoke(ws: Ws, neuronId: string, message: string) {
  const r = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message });
  expect(r.status).toBe(202);
  return String(r.body.job_id);
}

async function untilStatus(ws: Ws, jobId: string, want: string, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    if (job.status === want) return job;
    if (job.status === 'completed' || job.status === 'failed' || Date.now() > until)
      throw new Error(`job ${jobId} is ${job.status}, expected ${want}: ${job.failedReason ?? ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What one tool run costs per turn: the same neuron, message and simulator in a workspace of its own. */
async function calibrate() {
  const ws = await buildWorkspace(app);
  const id = await neuron(ws, 'planner', ['calculator']);
  const jobId = await invoke(ws, id, TOOL_PROMPT);
  expect((await settleJob(app, ws.key, jobId)).status).toBe('completed');
  const rows = (await rowsOf({ jobId })).sort((a, b) => a._id.localeCompare(b._id));
  expect(rows).toHaveLength(2);
  return { turn1: rows[0].totalTokens, total: tokensOf(rows), nanos: nanosOf(rows) };
}

const budgetOf = async (ws: Ws, id: string) => Budget.parse((await app.get(`/v1/budgets/${id}`, ws.key)).body);

describe('budgets', () => {
  it('pause: a budget just above one run lets it finish, pauses the next into an intervention only an admin answers, and the run resumes where it stopped', async () => {
    const cost = await calibrate();
    const ws = await buildWorkspace(app);
    const member = await ws.jwt([]);
    const id = await neuron(ws, 'planner', ['calculator']);
    const created = await app.post('/v1/budgets', ws.key, {
      scope: 'neuron',
      target_id: id,
      measure: 'tokens',
      period: 'day',
      limit: cost.total + 1,
      policy: 'pause',
    });
    expect(created.status, created.text).toBe(201);
    const budget = Budget.parse(created.body);
    expect(budget).toMatchObject({ spent: 0, remaining: cost.total + 1, exceeded: false, policy: 'pause' });
    expect(Date.parse(budget.period_end!) - Date.parse(budget.period_start!)).toBe(86_400_000);

    // Run 1 fits: it finishes, and what the budget shows spent is the ledger's sum.
    const first = await invoke(ws, id, TOOL_PROMPT);
    expect((await settleJob(app, ws.key, first)).status).toBe('completed');
    const afterFirst = await budgetOf(ws, budget.id);
    expect(afterFirst.spent).toBe(tokensOf(await rowsOf({ workspaceId: ws.workspaceId, neuronId: id })));
    expect(afterFirst.spent).toBe(cost.total);
    expect(afterFirst).toMatchObject({ remaining: 1, exceeded: false });

    // Run 2 would go over: it waits before its first model call, with no ledger row.
    const calls = sim.times.length;
    const second = await invoke(ws, id, TOOL_PROMPT);
    const waiting = await untilStatus(ws, second, 'waiting');
    const wf = waiting.waitingFor as {
      interventionId: string;
      kind: string;
      budget: { id: string; spent: number; limit: number };
    };
    expect(wf).toMatchObject({ kind: 'budget', budget: { id: budget.id, spent: cost.total, limit: cost.total + 1 } });
    expect(sim.times.length).toBe(calls);
    expect(await rowsOf({ jobId: second })).toHaveLength(0);
    const iv = Intervention.parse((await app.get(`/v1/interventions/${wf.interventionId}`, ws.key)).body);
    expect(iv).toMatchObject({ kind: 'budget', status: 'pending', options: ['approve', 'reject'], job_id: second });
    expect(iv.prompt).toContain('BUDGET_EXCEEDED');
    expect(iv.deliveries.map((d) => d.channel)).toEqual(['api']); // no public link can approve spending
    // …nor the API delivery's token on the public route (a token proves no role).
    const byToken = await app.post(`/v1/public/interventions/${iv.deliveries[0].token!}/respond`, undefined, {
      action: 'approve',
    });
    expect(byToken.status).toBe(403);
    const refused = await app.post(`/v1/interventions/${wf.interventionId}/respond`, member, { action: 'approve' });
    expect(refused.status).toBe(403);
    expect((await app.post(`/v1/jobs/${second}/resume`, member, { action: 'approve' })).status).toBe(403);
    expect((await app.post(`/v1/interventions/${wf.interventionId}/respond`, ws.key, { action: 'maybe' })).status).toBe(
      400,
    );

    const approved = await app.post(`/v1/interventions/${wf.interventionId}/respond`, ws.key, { action: 'approve' });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body).toMatchObject({ status: 'approved' });
    const done = await settleJob(app, ws.key, second);
    expect(done.status, done.failedReason).toBe('completed');
    // Approval holds for the rest of that run: both turns ran (the tool round trip), once each.
    const result = done.result as { turns: number; toolCalls: { name: string; result: string }[] };
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ name: 'calculator', result: expect.stringContaining('42') }),
    ]);
    expect(await rowsOf({ jobId: second })).toHaveLength(2);
    expect(sim.times.length).toBe(calls + 2);
    expect(
      (await app.post(`/v1/interventions/${wf.interventionId}/respond`, ws.key, { action: 'approve' })).status,
    ).toBe(409); // already answered: a state conflict

    // A pause between turns: the limit now leaves room for one more first turn only. Run 3's
    // first turn (the tool call) runs, the tool runs, and the run waits before its second turn.
    const spent = (await budgetOf(ws, budget.id)).spent;
    expect(spent).toBe(tokensOf(await rowsOf({ workspaceId: ws.workspaceId, neuronId: id })));
    const patched = await app.patch(`/v1/budgets/${budget.id}`, ws.key, { limit: spent + cost.turn1 + 1 });
    expect(patched.status, patched.text).toBe(200);
    const third = await invoke(ws, id, TOOL_PROMPT);
    const mid = await untilStatus(ws, third, 'waiting');
    expect(await rowsOf({ jobId: third })).toHaveLength(1);
    const before = sim.requests.length;
    const midIv = mid.waitingFor as { interventionId: string; turn: number };
    expect(midIv.turn).toBe(1);
    expect((await app.post(`/v1/jobs/${third}/resume`, ws.key, { action: 'approve' })).status).toBe(200);
    const thirdDone = await settleJob(app, ws.key, third);
    expect(thirdDone.status, thirdDone.failedReason).toBe('completed');
    // Resumed at its second turn: one more provider call, whose conversation carries the stored tool result.
    expect(sim.requests.length).toBe(before + 1);
    expect(JSON.stringify(sim.requests[before].messages)).toContain('42');
    expect((thirdDone.result as { toolCalls: unknown[] }).toolCalls).toHaveLength(1);
    expect(await rowsOf({ jobId: third })).toHaveLength(2);
  });

  it('a rejected budget pause fails the run with BUDGET_EXCEEDED; cancelling a waiting run cancels its intervention', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws, 'tight');
    const b = Budget.parse(
      (await app.post('/v1/budgets', ws.key, { scope: 'workspace', measure: 'tokens', period: 'month', limit: 1 }))
        .body,
    );
    expect(b.policy).toBe('pause');
    const job = await invoke(ws, id, 'hello there, how are you');
    const w = (await untilStatus(ws, job, 'waiting')).waitingFor as { interventionId: string };
    expect(
      (await app.post(`/v1/interventions/${w.interventionId}/respond`, ws.key, { action: 'reject' })).body,
    ).toMatchObject({ status: 'rejected' });
    const failed = await settleJob(app, ws.key, job);
    expect(failed.status).toBe('failed');
    expect(failed.failedReason).toMatch(/^BUDGET_EXCEEDED: /);

    const job2 = await invoke(ws, id, 'hello again');
    const w2 = (await untilStatus(ws, job2, 'waiting')).waitingFor as { interventionId: string };
    expect((await app.post(`/v1/jobs/${job2}/cancel`, ws.key, {})).status).toBe(200);
    expect((await settleJob(app, ws.key, job2)).status).toBe('failed');
    expect(Intervention.parse((await app.get(`/v1/interventions/${w2.interventionId}`, ws.key)).body).status).toBe(
      'cancelled',
    );
    expect(await rowsOf({ workspaceId: ws.workspaceId })).toHaveLength(0);
  });

  it('a pathway classify node is checked like a model turn: it waits for an admin, then classifies', async () => {
    sim.configure({ text: (b) => (String(b.messages[0]?.content ?? '').includes('Classify') ? 'billing' : null) });
    try {
      const ws = await buildWorkspace(app);
      const member = await ws.jwt([]);
      expect(
        (await app.post('/v1/budgets', ws.key, { scope: 'workspace', measure: 'tokens', period: 'day', limit: 1 }))
          .status,
      ).toBe(201);
      const p = await app.post(
        '/v1/pathways',
        ws.key,
        {
          name: 'triage',
          pathway_graph: {
            nodes: [
              { id: 's', type: 'start' },
              {
                id: 'c',
                type: 'classify',
                data: { categories: ['billing', 'support'], model: 'openai/gpt-4o-mini', input: '{{ input.text }}' },
              },
              { id: 'b', type: 'output', data: { value: '"billing desk"' } },
              { id: 'x', type: 'output', data: { value: '"support desk"' } },
            ],
            edges: [
              { source: 's', target: 'c' },
              { source: 'c', target: 'b', handle: 'billing' },
              { source: 'c', target: 'x', handle: 'support' },
            ],
          },
        },
        ws.brainHeaders,
      );
      expect(p.status, p.text).toBe(201);
      const ex = await app.post(
        `/v1/pathways/${String(p.body.id)}/execute`,
        ws.key,
        { input: { text: 'I want a refund' } },
        ws.brainHeaders,
      );
      const jobId = String(ex.body.job_id);
      const w = (await untilStatus(ws, jobId, 'waiting')).waitingFor as { interventionId: string; kind: string };
      expect(w.kind).toBe('budget');
      expect(await rowsOf({ jobId })).toHaveLength(0);
      expect((await app.post(`/v1/jobs/${jobId}/resume`, member, { action: 'approve' })).status).toBe(403);
      expect((await app.post(`/v1/jobs/${jobId}/resume`, ws.key, { action: 'approve' })).status).toBe(200);
      const done = await settleJob(app, ws.key, jobId);
      expect(done.status, done.failedReason).toBe('completed');
      expect(done.result).toMatchObject({ output: 'billing desk' });
      const rows = await rowsOf({ jobId });
      expect(rows).toHaveLength(1);
      expect(rows[0]._id).toContain(':classify:');
      // Rejected, the run fails with BUDGET_EXCEEDED, and the intervention says rejected (not cancelled).
      const again = String(
        (
          await app.post(
            `/v1/pathways/${String(p.body.id)}/execute`,
            ws.key,
            { input: { text: 'refund again' } },
            ws.brainHeaders,
          )
        ).body.job_id,
      );
      const w2 = (await untilStatus(ws, again, 'waiting')).waitingFor as { interventionId: string };
      expect(
        (await app.post(`/v1/interventions/${w2.interventionId}/respond`, ws.key, { action: 'reject' })).body,
      ).toMatchObject({ status: 'rejected' });
      const failed = await settleJob(app, ws.key, again);
      expect(failed.status).toBe('failed');
      expect(failed.failedReason).toMatch(/^BUDGET_EXCEEDED: /);
      expect(Intervention.parse((await app.get(`/v1/interventions/${w2.interventionId}`, ws.key)).body).status).toBe(
        'rejected',
      );
    } finally {
      sim.configure({ text: undefined });
    }
  });

  it('fail: a USD budget just above one run lets it finish and fails the next with BUDGET_EXCEEDED before any call', async () => {
    const cost = await calibrate();
    const ws = await buildWorkspace(app);
    const id = await neuron(ws, 'planner', ['calculator']);
    const limit = (cost.nanos + 1) / 1e9;
    const b = Budget.parse(
      (
        await app.post('/v1/budgets', ws.key, {
          scope: 'workspace',
          measure: 'usd',
          period: 'month',
          limit,
          policy: 'fail',
        })
      ).body,
    );
    const first = await invoke(ws, id, TOOL_PROMPT);
    expect((await settleJob(app, ws.key, first)).status).toBe('completed');
    const view = await budgetOf(ws, b.id);
    expect(view.spent).toBeCloseTo(nanosOf(await rowsOf({ workspaceId: ws.workspaceId })) / 1e9, 12);
    expect(view.exceeded).toBe(false);

    const calls = sim.times.length;
    const second = await invoke(ws, id, TOOL_PROMPT);
    const failed = await settleJob(app, ws.key, second);
    expect(failed.status).toBe('failed');
    expect(failed.failedReason).toMatch(
      /^BUDGET_EXCEEDED: the workspace budget of \$[\d.]+ per month would be exceeded/,
    );
    expect(sim.times.length).toBe(calls);
    expect(await rowsOf({ jobId: second })).toHaveLength(0);
    // Deleting the budget lifts it.
    expect((await app.del(`/v1/budgets/${b.id}`, ws.key)).status).toBe(200);
    expect((await settleJob(app, ws.key, await invoke(ws, id, TOOL_PROMPT))).status).toBe('completed');
  });

  it("a share link's max_tokens is its lifetime budget under /v1/budgets (one mechanism)", async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws, 'shared');
    const r = ReceptorList.parse(
      (await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body,
    ).receptors.find((x) => x.executable_target.id === id)!;
    const share = ShareView.parse(
      (await app.post(`/v1/receptors/${ws.workspaceId}/${r.slug}/share`, ws.key, { budget: { max_tokens: 1 } })).body,
    );
    const listed = BudgetList.parse(
      (await app.get(`/v1/budgets?scope=share_token&target_id=${share.id}`, ws.key)).body,
    );
    expect(listed.budgets).toEqual([
      expect.objectContaining({
        scope: 'share_token',
        target_id: share.id,
        measure: 'tokens',
        period: 'total',
        limit: 1,
        policy: 'fail',
        period_start: null,
      }),
    ]);
    // A one-token budget: the run fails before its first call.
    const url = `/v1/public/receptors/by-id/${r.id}/execute?t=${encodeURIComponent(share.token!)}`;
    const run = await app.post(url, undefined, { message: 'hello from the link' });
    expect(run.status).toBe(202);
    const failed = await settleJob(app, ws.key, String(run.body.job_id));
    expect(failed.failedReason).toMatch(/^BUDGET_EXCEEDED: the share token .* budget of 1 tokens in all/);
    // Changing that budget is changing the link's max_tokens.
    expect((await app.patch(`/v1/budgets/${listed.budgets[0].id}`, ws.key, { limit: 1_000_000 })).status).toBe(200);
    const view = ShareView.parse((await app.get(`/v1/receptors/${ws.workspaceId}/${r.id}/share`, ws.key)).body);
    expect(view.budget).toMatchObject({ max_tokens: 1_000_000, used_tokens: 0 });
    const ok = await app.post(url, undefined, { message: 'hello again' });
    expect((await settleJob(app, ws.key, String(ok.body.job_id))).status).toBe('completed');
    // Spent (limit at what the link used): the door refuses with 402.
    const used = ShareView.parse((await app.get(`/v1/receptors/${ws.workspaceId}/${r.id}/share`, ws.key)).body).budget
      .used_tokens;
    expect(used).toBe(tokensOf(await rowsOf({ workspaceId: ws.workspaceId, shareTokenId: share.id })));
    const rotated = ShareView.parse(
      (await app.post(`/v1/receptors/${ws.workspaceId}/${r.id}/share/rotate`, ws.key, { budget: { max_tokens: used } }))
        .body,
    );
    expect((await app.get(`/v1/budgets/${listed.budgets[0].id}`, ws.key)).body).toMatchObject({
      limit: used,
      exceeded: true,
    });
    const refused = await app.post(
      `/v1/public/receptors/by-id/${r.id}/execute?t=${encodeURIComponent(rotated.token!)}`,
      undefined,
      { message: 'more' },
    );
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'BUDGET_EXCEEDED' });
  });

  it('every route is admin only and validates its input; another workspace is a 404', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const member = await ws.jwt([]);
    const id = await neuron(ws, 'n');
    const good = { scope: 'neuron', target_id: id, measure: 'tokens', period: 'day', limit: 1000 };
    expect((await app.post('/v1/budgets', member, good)).status).toBe(403);
    expect((await app.get('/v1/budgets', member)).status).toBe(403);
    expect((await app.get('/v1/budgets')).status).toBe(401);
    const bad: Record<string, unknown>[] = [
      { ...good, scope: 'galaxy' },
      { ...good, measure: 'euros' },
      { ...good, period: 'week' },
      { ...good, policy: 'ignore' },
      { ...good, limit: 0 },
      { ...good, limit: -5 },
      { ...good, limit: 1.5 },
      { ...good, limit: '100' },
      { ...good, target_id: 'nope' },
      { ...good, target_id: undefined },
      { scope: 'workspace', target_id: id, measure: 'usd', period: 'day', limit: 1 },
      { ...good, extra: true },
      {},
    ];
    for (const body of bad) {
      const r = await app.post('/v1/budgets', ws.key, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    // A USD limit may have cents; a token limit may not.
    expect(
      (await app.post('/v1/budgets', ws.key, { scope: 'workspace', measure: 'usd', period: 'day', limit: 2.5 })).status,
    ).toBe(201);
    expect((await app.post('/v1/budgets', ws.key, { ...good, target_id: await neuron(other, 'theirs') })).status).toBe(
      404,
    );
    const created = Budget.parse((await app.post('/v1/budgets', ws.key, good)).body);
    expect((await app.post('/v1/budgets', ws.key, { ...good, limit: 5 })).status).toBe(409);
    expect((await app.patch(`/v1/budgets/${created.id}`, ws.key, {})).status).toBe(400);
    expect((await app.patch(`/v1/budgets/${created.id}`, ws.key, { limit: 2.5 })).status).toBe(400);
    expect(
      (await app.patch(`/v1/budgets/${created.id}`, ws.key, { policy: 'fail', name: 'nightly' })).body,
    ).toMatchObject({ policy: 'fail', name: 'nightly', limit: 1000 });
    expect((await app.get('/v1/budgets?scope=galaxy', ws.key)).status).toBe(400);
    expect((await app.get('/v1/budgets/not-a-uuid', ws.key)).status).toBe(400);
    expect((await app.get(`/v1/budgets/${created.id}`, other.key)).status).toBe(404);
    expect((await app.del(`/v1/budgets/${created.id}`, other.key)).status).toBe(404);
    expect(BudgetList.parse((await app.get('/v1/budgets', other.key)).body).total).toBe(0);
    expect(BudgetList.parse((await app.get('/v1/budgets?scope=neuron', ws.key)).body).budgets.map((b) => b.id)).toEqual(
      [created.id],
    );
  });

  it('the check reads no store in a workspace without budgets, sees a budget another process wrote at its next check, and sums counters', async () => {
    const ws = await buildWorkspace(app);
    // Reads of budgets and usage only: the process's background loops (the webhook outbox, the
    // start sweep) read other collections meanwhile.
    let reads = 0;
    const count = (e: CommandStartedEvent) => {
      const target = e.command.find ?? e.command.aggregate;
      if (typeof target === 'string' && (target === 'budgets' || target.startsWith('usage_'))) reads++;
    };
    app.deps.mongo.on('commandStarted', count);
    onTestFinished(() => void app.deps.mongo.off('commandStarted', count));
    const storeCommands = async () => reads;
    const check = async () =>
      app.services.budgets.evaluate(
        app.services.budgets.covering(await app.services.budgets.ofWorkspace(ws.workspaceId), {}),
        { tokens: 10, costNanos: 0 },
      );
    expect(await check()).toBeNull(); // read once, then remembered
    const before = await storeCommands();
    for (let i = 0; i < 5; i++) expect(await check()).toBeNull();
    expect(await storeCommands()).toBe(before);
    // Another process writes a budget (the store, then the workspace's budget version): this one sees it at its next check.
    const b: BudgetDoc = {
      _id: randomUUID(),
      workspaceId: ws.workspaceId,
      key: `${ws.workspaceId}:workspace:-:tokens:total`,
      scope: 'workspace',
      targetId: null,
      measure: 'tokens',
      period: 'total',
      limit: 100,
      policy: 'fail',
      name: null,
      createdBy: null,
      createdAt: new Date(),
      updatedAt: new Date(),
    };
    await app.deps.db.collection<BudgetDoc>('budgets').insertOne(b);
    expect(await check()).toBeNull(); // the version is unchanged: the remembered list (no budget) is used
    await app.deps.redis.incr(`${app.config.REDIS_PREFIX}usage:{${ws.workspaceId}}:budgets`);
    expect(await check()).toBeNull(); // now covered, and nothing spent
    await app.services.usage.record({
      key: `${randomUUID()}:chat:0:1`,
      workspaceId: ws.workspaceId,
      kind: 'chat',
      modelId: 'openai/gpt-4o-mini',
      usage: { inputTokens: 60, outputTokens: 35, totalTokens: 95 },
      placed: false,
      attribution: {
        brainId: ws.brainId,
        userId: null,
        apiKeyId: ws.apiKeyId,
        jobId: randomUUID(),
        traceId: null,
        receptorId: null,
        neuronId: null,
        pathwayId: null,
      },
    });
    expect(await check()).toMatchObject({ budgetId: b._id, spent: 95, policy: 'fail' }); // 95 + 10 > 100
    expect(await budgetOf(ws, b._id)).toMatchObject({ spent: 95, remaining: 5 });
  });
});
