import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { Intervention } from '../../src/interventions/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { lastUserText } from '../support/scripted-openai.js';
import { dataOf, readSse } from '../support/sse.js';
import { usePlatform } from '../support/platform.js';

const { app, llm } = usePlatform();

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
type N = { id: string; type: string; data?: Record<string, unknown> };
type E = { source: string; target: string; handle?: string };
const edge = (source: string, target: string, handle?: string): E => ({
  source,
  target,
  ...(handle ? { handle } : {}),
});

async function createPathway(ws: Ws, nodes: N[], edges: E[], name = `p-${randomUUID().slice(0, 6)}`) {
  const r = await app.post('/v1/pathways', ws.key, { name, pathway_graph: { nodes, edges } }, ws.brainHeaders);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { id: string };
}
async function execute(ws: Ws, id: string, body: Record<string, unknown> = {}) {
  const r = await app.post(`/v1/pathways/${id}/execute`, ws.key, body, ws.brainHeaders);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  expect(r.body).toMatchObject({ status: 'pending' });
  return String(r.body.job_id);
}
async function waitFor(ws: Ws, jobId: string, statuses: string[], timeoutMs = 30_000) {
  const t0 = Date.now();
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    if (statuses.includes(job.status)) return job;
    if (Date.now() - t0 > timeoutMs) throw new Error(`job ${jobId} is ${job.status}, wanted ${statuses.join('/')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const done = (ws: Ws, jobId: string) => waitFor(ws, jobId, ['completed', 'failed']);

describe('pathway execution', () => {
  it('runs start → transform → delay → output, with node events, progress and the result', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        { id: 't', type: 'transform', data: { expression: '{ "total": input.a + input.b }' } },
        { id: 'd', type: 'delay', data: { ms: 300 } },
        { id: 'o', type: 'output', data: { value: 'last.total * 10' } },
      ],
      [edge('s', 't'), edge('t', 'd'), edge('d', 'o')],
    );
    const jobId = await execute(ws, p.id, { input: { a: 2, b: 3 } });
    const job = await done(ws, jobId);
    expect(job.status).toBe('completed');
    expect(job.progress).toBe(100);
    expect(job.result).toMatchObject({ output: 50, pathwayId: p.id, pathwayVersion: 1 });
    const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, { headers: { authorization: `Bearer ${ws.key}` } });
    const kinds = sse.events
      .map((e) => dataOf(e))
      .filter((d) => d.type === 'node_start' || d.type === 'node_finish')
      .map((d) => `${String(d.type)}:${String(d.node_type)}`);
    expect(kinds).toEqual([
      'node_start:start',
      'node_finish:start',
      'node_start:transform',
      'node_finish:transform',
      'node_start:delay',
      'node_finish:delay',
      'node_start:output',
      'node_finish:output',
    ]);
    // Each node_finish carries the node's value (bounded), so a client shows it while the run goes on.
    const values = Object.fromEntries(
      sse.events
        .map((e) => dataOf(e))
        .filter((d) => d.type === 'node_finish')
        .map((d) => [String(d.node), d.value]),
    );
    expect(values).toEqual({ s: { a: 2, b: 3 }, t: { total: 5 }, d: { total: 5 }, o: 50 });
    expect(dataOf(sse.events.at(-1)!).type).toBe('complete');
  });

  it('takes both if branches by the condition over the run state', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        { id: 'i', type: 'if', data: { condition: 'input.score > 5' } },
        { id: 'hi', type: 'output', data: { value: '"high"' } },
        { id: 'lo', type: 'output', data: { value: '"low"' } },
      ],
      [edge('s', 'i'), edge('i', 'hi', 'true'), edge('i', 'lo', 'false')],
    );
    const high = await done(ws, await execute(ws, p.id, { input: { score: 9 } }));
    const low = await done(ws, await execute(ws, p.id, { input: { score: 1 } }));
    expect(high.result).toMatchObject({ output: 'high' });
    expect(low.result).toMatchObject({ output: 'low' });
  });

  it('a while loop stops at its condition, and another stops at its iteration cap', async () => {
    const ws = await buildWorkspace(app);
    const graph = (condition: string, max: number) =>
      [
        [
          { id: 's', type: 'start' },
          { id: 'w', type: 'while', data: { condition, max_iterations: max } },
          { id: 'b', type: 'transform', data: { expression: '$count(loops) = 0 ? 1 : loops.`1`' } },
          { id: 'o', type: 'output', data: { value: 'last.iterations' } },
        ],
        [edge('s', 'w'), edge('w', 'b', 'body'), edge('b', 'w'), edge('w', 'o', 'done')],
      ] as const;
    const [n1, e1] = graph('$not($exists(loops.`1`)) or loops.`1` < 3', 50);
    const byCondition = await done(ws, await execute(ws, (await createPathway(ws, [...n1], [...e1])).id));
    expect(byCondition.result).toMatchObject({ output: 3 });
    const [n2, e2] = graph('true', 4);
    const byCap = await done(ws, await execute(ws, (await createPathway(ws, [...n2], [...e2])).id));
    expect(byCap.status).toBe('completed');
    expect(byCap.result).toMatchObject({ output: 4 });
  });

  it('classify routes along the edge of the category the model picks; a neuron node runs the neuron', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (
      await app.post('/v1/neurons', ws.key, {
        name: 'replier',
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You reply.' },
      })
    ).body as { id: string };
    llm.setDefault((body) => {
      const sys = String(body.messages.find((m) => m.role === 'system')?.content ?? '');
      if (sys.includes('Classify')) return { text: lastUserText(body).includes('refund') ? 'billing' : 'support' };
      return { text: `reply to: ${lastUserText(body)}` };
    });
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        {
          id: 'c',
          type: 'classify',
          data: { categories: ['billing', 'support'], model: 'openai/gpt-4o-mini', input: '{{ input.text }}' },
        },
        { id: 'b', type: 'neuron', data: { neuron_id: neuron.id, message: 'billing: {{ input.text }}' } },
        { id: 'x', type: 'output', data: { value: '"support path"' } },
      ],
      [edge('s', 'c'), edge('c', 'b', 'billing'), edge('c', 'x', 'support')],
    );
    const traceId = randomUUID();
    await app.post(`/v1/traces/${traceId}/messages`, ws.key, { content: 'thread start' });
    const billing = await done(ws, await execute(ws, p.id, { input: { text: 'I want a refund' }, trace_id: traceId }));
    expect(billing.status).toBe('completed');
    expect(billing.result).toMatchObject({ output: 'reply to: billing: I want a refund' });
    const msgs = (
      await app.get<{ engrams: { source_type: string; source_id: string }[] }>(`/v1/traces/${traceId}/messages`, ws.key)
    ).body.engrams;
    expect(msgs.some((m) => m.source_type === 'neuron' && m.source_id === neuron.id)).toBe(true);
    const support = await done(ws, await execute(ws, p.id, { input: { text: 'my screen is broken' } }));
    expect(support.result).toMatchObject({ output: 'support path' });
    // The classify calls are billed: each is a ledger row attributed to its pathway, and the usage route counts them.
    const rows = await app.deps.db
      .collection('usage_ledger')
      .find({ workspaceId: ws.workspaceId, jobId: support.job_id })
      .toArray();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ pathwayId: p.id, kind: 'chat', model: 'gpt-4o-mini' });
    expect(String(rows[0]._id)).toContain(':classify:');
    const admin = await ws.jwt(['workspace_admin']);
    const usage = await app.get<{
      usageByResource: { pathway: Record<string, { invokeCount: number; tokens: number }> };
    }>(`/v1/usage/${ws.workspaceId}`, admin);
    const pathwayRows = await app.deps.db
      .collection('usage_ledger')
      .find({ workspaceId: ws.workspaceId, pathwayId: p.id })
      .toArray();
    expect(pathwayRows.length).toBe(3); // two classify calls and the neuron node's turn
    expect(usage.body.usageByResource.pathway[p.id].tokens).toBe(
      pathwayRows.reduce((n, r) => n + Number(r.totalTokens), 0),
    );
  });

  const approvalGraph = (): [N[], E[]] => [
    [
      { id: 's', type: 'start' },
      { id: 'h', type: 'human', data: { title: 'Ship it?', prompt: 'Approve the release' } },
      { id: 'yes', type: 'output', data: { value: '"shipped"' } },
      { id: 'no', type: 'output', data: { value: '"held back"' } },
    ],
    [edge('s', 'h'), edge('h', 'yes', 'approve'), edge('h', 'no', 'reject')],
  ];

  async function waitingJob(ws: Ws) {
    const [nodes, edges] = approvalGraph();
    const p = await createPathway(ws, nodes, edges);
    const jobId = await execute(ws, p.id);
    const job = await waitFor(ws, jobId, ['waiting']);
    expect(job.waitingFor).toMatchObject({ type: 'intervention', options: ['approve', 'reject'] });
    expect(job.current_step).toContain('human');
    // The jobs list (read model) and the status route (live query) agree while the run waits.
    const listed = (
      await app.get<{ jobs: { job_id: string; progress: number; current_step: string }[] }>(
        '/v1/jobs?status=waiting',
        ws.key,
      )
    ).body.jobs.find((j) => j.job_id === jobId);
    expect({ progress: listed?.progress, current_step: listed?.current_step }).toEqual({
      progress: job.progress,
      current_step: job.current_step,
    });
    return { jobId, interventionId: String(job.waitingFor!.interventionId) };
  }

  it('a human node is approved through POST /v1/jobs/:id/input; mismatched input gets 400', async () => {
    const ws = await buildWorkspace(app);
    const { jobId, interventionId } = await waitingJob(ws);
    const wrong = await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
      workspace_id: ws.workspaceId,
      input: { type: 'intervention_response', interventionId: randomUUID(), action: 'approve' },
    });
    expect(wrong.status).toBe(400);
    const badAction = await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
      input: { type: 'intervention_response', interventionId, action: 'maybe' },
    });
    expect(badAction.status).toBe(400);
    const ok = await app.post(`/v1/jobs/${jobId}/input`, ws.key, {
      workspace_id: ws.workspaceId,
      input: { type: 'intervention_response', interventionId, action: 'approve' },
    });
    expect(ok.status).toBe(200);
    const job = await done(ws, jobId);
    expect(job.failedReason).toBeUndefined();
    expect(job.result).toMatchObject({ output: 'shipped' });
    const rec = Intervention.parse((await app.get(`/v1/interventions/${interventionId}`, ws.key)).body);
    expect(rec.status).toBe('approved');
    expect(rec.deliveries.length).toBeGreaterThan(0);
  });

  it('a human node is answered through /interventions/:id/respond (reject) and through the public token (approve)', async () => {
    const ws = await buildWorkspace(app);
    const a = await waitingJob(ws);
    const r = await app.post(`/v1/interventions/${a.interventionId}/respond`, ws.key, {
      action: 'reject',
      comment: 'not yet',
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'rejected', comment: 'not yet' });
    expect((await done(ws, a.jobId)).result).toMatchObject({ output: 'held back' });
    // A second answer is a state conflict.
    const again = await app.post(`/v1/interventions/${a.interventionId}/respond`, ws.key, { action: 'approve' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'CONFLICT' });

    const b = await waitingJob(ws);
    const rec = Intervention.parse((await app.get(`/v1/interventions/${b.interventionId}`, ws.key)).body);
    const token = rec.deliveries.find((d) => d.channel === 'link')!.token!;
    const pub = await app.get(`/v1/public/interventions/${token}`);
    expect(pub.status).toBe(200);
    expect(pub.body).toMatchObject({
      intervention: { id: b.interventionId, status: 'pending', options: ['approve', 'reject'] },
    });
    expect(JSON.stringify(pub.body)).not.toContain(rec.deliveries.find((d) => d.channel === 'api')!.token!);
    expect((await app.post(`/v1/public/interventions/${token}/respond`, undefined, { action: 'approve' })).status).toBe(
      200,
    );
    expect((await done(ws, b.jobId)).result).toMatchObject({ output: 'shipped' });
    expect((await app.get('/v1/public/interventions/not-a-real-token-123456')).status).toBe(404);

    const list = await app.get(`/v1/interventions?job_id=${b.jobId}`, ws.key, ws.brainHeaders);
    expect(list.body).toMatchObject({ total: 1 });
    const summary = await app.get('/v1/interventions?summary=1&brain_scope=all', ws.key);
    expect(summary.body).toMatchObject({ byStatus: { approved: 1, rejected: 1 }, grouped: { resolved: 2, active: 0 } });
  });

  it('an intervention expires on its timer; cancelling a waiting job cancels its intervention', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        { id: 'h', type: 'human', data: { title: 'quick', expires_in_s: 1 } },
        { id: 'o', type: 'output' },
      ],
      [edge('s', 'h'), edge('h', 'o')],
    );
    const jobId = await execute(ws, p.id);
    const job = await done(ws, jobId);
    expect(job.status).toBe('failed');
    expect(job.failedReason).toMatch(/expired/);
    const list = await app.get(`/v1/interventions?job_id=${jobId}&brain_scope=all`, ws.key);
    expect((list.body.interventions as { status: string }[])[0].status).toBe('expired');

    const w = await waitingJob(ws);
    expect((await app.post(`/v1/jobs/${w.jobId}/cancel`, ws.key)).status).toBe(200);
    expect(Intervention.parse((await app.get(`/v1/interventions/${w.interventionId}`, ws.key)).body).status).toBe(
      'cancelled',
    );
    expect((await done(ws, w.jobId)).status).toBe('failed');
  });

  it('resume continues a paused run', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        { id: 'h', type: 'human', data: { pause: true, title: 'checkpoint' } },
        { id: 'o', type: 'output', data: { value: '"resumed"' } },
      ],
      [edge('s', 'h'), edge('h', 'o')],
    );
    const jobId = await execute(ws, p.id);
    await waitFor(ws, jobId, ['paused']);
    expect((await app.post(`/v1/jobs/${jobId}/resume`, ws.key, {})).status).toBe(200);
    expect((await done(ws, jobId)).result).toMatchObject({ output: 'resumed' });
    expect((await app.post(`/v1/jobs/${jobId}/resume`, ws.key, {})).status).toBe(400);
  });

  it('a run pinned to version 1 runs version 1 after version 2 exists', async () => {
    const ws = await buildWorkspace(app);
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        { id: 'o', type: 'output', data: { value: '"v1"' } },
      ],
      [edge('s', 'o')],
    );
    const put = await app.put(
      `/v1/pathways/${p.id}`,
      ws.key,
      {
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 'o', type: 'output', data: { value: '"v2"' } },
          ],
          edges: [edge('s', 'o')],
        },
      },
      ws.brainHeaders,
    );
    expect(put.status).toBe(200);
    const head = await execute(ws, p.id, { input: { n: 2 } });
    expect((await done(ws, head)).result).toMatchObject({ output: 'v2', pathwayVersion: 2 });
    const pinned = await execute(ws, p.id, { pathway_version: 1, input: { n: 1 } });
    expect((await done(ws, pinned)).result).toMatchObject({
      output: 'v1',
      pathwayVersion: 1,
    });
    // The job says which version it runs and with what input (the console draws that version).
    for (const [jobId, version, input] of [
      [head, 2, { n: 2 }],
      [pinned, 1, { n: 1 }],
    ] as const) {
      for (const path of [`/v1/jobs/${jobId}`, `/v1/jobs/${jobId}/status`])
        expect(Job.parse((await app.get(path, ws.key)).body)).toMatchObject({ pathway_version: version, input });
    }
    // Lists carry the version, not the input.
    const listed = (await app.get<{ jobs: unknown[] }>(`/v1/jobs?pathway_id=${p.id}`, ws.key)).body.jobs.map((j) =>
      Job.parse(j),
    );
    expect(listed.map((j) => [j.pathway_version, 'input' in j]).sort()).toEqual([
      [1, false],
      [2, false],
    ]);
  });

  it('execute takes the slug of the name in place of the id, in the caller brain; two of one slug ask for the id', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const post = (w: Ws, ref: string, body: Record<string, unknown> = {}) =>
      app.post(`/v1/pathways/${ref}/execute`, w.key, body, w.brainHeaders);
    const nodes: N[] = [
      { id: 's', type: 'start' },
      { id: 'o', type: 'output', data: { value: '"hi " & input.who' } },
    ];
    const { id } = await createPathway(ws, nodes, [edge('s', 'o')], 'Support Triage');
    const read = await app.get(`/v1/pathways/${id}`, ws.key, ws.brainHeaders);
    expect(read.body).toMatchObject({ name: 'Support Triage', slug: 'support-triage' });
    for (const ref of ['support-triage', 'Support%20Triage']) {
      const job = await done(ws, await execute(ws, ref, { input: { who: ref } }));
      expect(job).toMatchObject({ status: 'completed', pathway_id: id });
    }
    // Another workspace, or no such slug: 404.
    expect((await post(other, 'support-triage')).status).toBe(404);
    expect((await post(ws, 'no-such-pathway')).status).toBe(404);
    // A rename moves the slug with the name.
    await app.put(`/v1/pathways/${id}`, ws.key, { name: 'Triage v2' }, ws.brainHeaders);
    expect((await post(ws, 'support-triage')).status).toBe(404);
    await execute(ws, 'triage-v2');
    // Names are free text: a second pathway with the same slug makes the slug ambiguous (400 naming it).
    await createPathway(ws, nodes, [edge('s', 'o')], 'triage V2');
    const twice = await post(ws, 'triage-v2');
    expect(twice.status).toBe(400);
    expect(twice.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(twice.body.message)).toContain('"triage-v2"');
    await execute(ws, id);
  });

  it('POST /v1/jobs runs a stored pathway or an inline index graph; not-found rules', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        { id: 'o', type: 'output', data: { value: 'input.x' } },
      ],
      [edge('s', 'o')],
    );
    const stored = await app.post('/v1/jobs', ws.key, { pathway_id: p.id, data: { x: 7 } }, ws.brainHeaders);
    expect(stored.status).toBe(200);
    expect((await done(ws, String(stored.body.job_id))).result).toMatchObject({ output: 7 });
    const inline = await app.post('/v1/jobs', ws.key, {
      pathway: {
        nodes: [
          { type: 'start', data: {} },
          { type: 'transform', data: { expression: 'input.x + 1' } },
        ],
        edges: [
          [0, 1],
          [1, -1],
        ],
      },
      input: { x: 1 },
    });
    expect(inline.status).toBe(200);
    expect((await done(ws, String(inline.body.job_id))).result).toMatchObject({ output: 2 });
    // A stored pathway through POST /v1/jobs records its head version and merged input; an inline graph has no version.
    expect(Job.parse((await app.get(`/v1/jobs/${String(stored.body.job_id)}`, ws.key)).body)).toMatchObject({
      pathway_version: 1,
      input: { x: 7 },
    });
    expect(Job.parse((await app.get(`/v1/jobs/${String(inline.body.job_id)}`, ws.key)).body)).toMatchObject({
      pathway_id: null,
      pathway_version: null,
      input: { x: 1 },
    });
    const jobs = await app.get(`/v1/jobs?pathway_id=${p.id}`, ws.key);
    expect(jobs.body).toMatchObject({ total: 1 });

    expect((await app.post(`/v1/pathways/${p.id}/execute`, other.key, {}, other.brainHeaders)).status).toBe(404);
    expect((await app.post(`/v1/pathways/${p.id}/execute`, ws.key, {})).status).toBe(404);
    await app.put(`/v1/pathways/${p.id}`, ws.key, { is_active: false }, ws.brainHeaders);
    expect((await app.post(`/v1/pathways/${p.id}/execute`, ws.key, {}, ws.brainHeaders)).status).toBe(404);
    expect(
      (await app.post(`/v1/pathways/${p.id}/execute`, ws.key, { pathway_version: 1 }, ws.brainHeaders)).status,
    ).toBe(202);
    expect(
      (await app.post('/v1/jobs', ws.key, { pathway: { nodes: [{ type: 'bogus', data: {} }], edges: [] } })).status,
    ).toBe(400);
    expect((await app.post('/v1/jobs', ws.key, {})).status).toBe(400);
  });

  it('a transform that loops forever fails its node at the time box, once, without retries; a syntax error is refused at start', async () => {
    const ws = await buildWorkspace(app);
    const runaway = '( $f := function($n) { $n < 0 ? 0 : $f($n + 1) }; $f(0) )';
    const res = await app.post('/v1/jobs', ws.key, {
      pathway: {
        nodes: [
          { type: 'start', data: {} },
          { type: 'transform', data: { expression: runaway } },
        ],
        edges: [
          [0, 1],
          [1, -1],
        ],
      },
      input: {},
    });
    expect(res.status).toBe(200);
    const jobId = String(res.body.job_id);
    const job = await waitFor(ws, jobId, ['failed']);
    expect(job.failedReason).toMatch(/failed: .*(Stack overflow|timeout|stack)/i);
    // The node's evaluation ran once: a deterministic failure is not retried.
    const history = await app.deps.temporal.client.workflow.getHandle(jobId).fetchHistory();
    const markers = (history.events ?? []).filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    // Each local activity's marker records its activity type and the attempt that ended it.
    const decoded = markers.map((m) => {
      const data = m.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
      return JSON.parse(Buffer.from(data as Uint8Array).toString('utf8')) as { activity_type: string; attempt: number };
    });
    // One pathwayStep per node (workflows/pathways/pathway-run.ts): the start node's entries, then the
    // transform's entries with its evaluation, which failed on its first attempt and stayed failed.
    const hops = decoded.filter((d) => d.activity_type === 'pathwayStep' || d.activity_type === 'evaluate');
    expect(hops.map((d) => d.activity_type)).toEqual(['pathwayStep', 'pathwayStep']);
    expect(hops.map((d) => d.attempt)).toEqual([1, 1]);
    const bad = await app.post('/v1/jobs', ws.key, {
      pathway: {
        nodes: [
          { type: 'start', data: {} },
          { type: 'transform', data: { expression: 'input.x +' } },
        ],
        edges: [
          [0, 1],
          [1, -1],
        ],
      },
      input: {},
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('data.expression');
  });

  it('a pathway run pins the versions of its neurons when it starts: an edit while it waits does not change what runs', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (
      await app.post('/v1/neurons', ws.key, {
        name: 'pinned',
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You are version one.' },
      })
    ).body as { id: string };
    llm.setDefault((body) => ({ text: String(body.messages.find((m) => m.role === 'system')?.content ?? 'none') }));
    const p = await createPathway(
      ws,
      [
        { id: 's', type: 'start' },
        { id: 'h', type: 'human', data: { title: 'go?' } },
        { id: 'n', type: 'neuron', data: { neuron_id: neuron.id, message: 'hello' } },
        { id: 'x', type: 'output', data: { value: '"stopped"' } },
      ],
      [edge('s', 'h'), edge('h', 'n', 'approve'), edge('h', 'x', 'reject')],
    );
    const jobId = await execute(ws, p.id);
    const waiting = await waitFor(ws, jobId, ['waiting']);
    expect(
      (
        await app.put(`/v1/neurons/${neuron.id}`, ws.key, {
          neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You are version two.' },
        })
      ).status,
    ).toBe(200);
    await app.post(`/v1/interventions/${String(waiting.waitingFor!.interventionId)}/respond`, ws.key, {
      action: 'approve',
    });
    const job = await done(ws, jobId);
    expect(job.status).toBe('completed');
    expect(JSON.stringify(job.result)).toContain('You are version one.');
    // A run started now runs version two.
    const later = await execute(ws, p.id);
    const w2 = await waitFor(ws, later, ['waiting']);
    await app.post(`/v1/interventions/${String(w2.waitingFor!.interventionId)}/respond`, ws.key, { action: 'approve' });
    expect(JSON.stringify((await done(ws, later)).result)).toContain('You are version two.');
  });
});
