/** Pathways as people write them: bodies that say where input goes, conditions written the JavaScript way. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';

const { app } = usePlatform();
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const refundGraph = {
  nodes: [
    { id: 'start', type: 'start' },
    { id: 'big', type: 'if', data: { condition: 'input.amount > 100 && !(input.vip == true)' } },
    { id: 'review', type: 'output', data: { value: '"needs review"' } },
    { id: 'auto', type: 'output', data: { value: '"auto-approved"' } },
  ],
  edges: [
    { source: 'start', target: 'big' },
    { source: 'big', target: 'review', handle: 'true' },
    { source: 'big', target: 'auto', handle: 'false' },
  ],
};

async function createPathway(ws: Ws) {
  const r = await app.post(
    '/v1/pathways',
    ws.key,
    { name: `refund-${randomUUID().slice(0, 6)}`, pathway_graph: refundGraph },
    ws.brainHeaders,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String(r.body.id);
}

async function resultOf(ws: Ws, jobId: string): Promise<unknown> {
  const t0 = Date.now();
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    if (job.status === 'completed' || job.status === 'failed') return job.result;
    if (Date.now() - t0 > 30_000) throw new Error(`job ${jobId} is still ${job.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('pathway authoring', () => {
  it('execute refuses input that is not wrapped in "input", naming the key; nothing runs', async () => {
    const ws = await buildWorkspace(app);
    const id = await createPathway(ws);
    const r = await app.post(`/v1/pathways/${id}/execute`, ws.key, { amount: 50 }, ws.brainHeaders);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/unknown key "amount".*"input"/);
    const jobs = await app.get(`/v1/jobs?pathway_id=${id}`, ws.key, ws.brainHeaders);
    expect(jobs.status).toBe(200);
    expect(jobs.body.jobs).toHaveLength(0);
    const j = await app.post('/v1/jobs', ws.key, { pathway_id: id, amount: 50 }, ws.brainHeaders);
    expect(j.status).toBe(400);
    expect(j.body.message).toMatch(/unknown key "amount"/);
  });

  it('a condition written with ==, && and ! takes the branch its writer meant', async () => {
    const ws = await buildWorkspace(app);
    const id = await createPathway(ws);
    const run = async (input: Record<string, unknown>) => {
      const r = await app.post(`/v1/pathways/${id}/execute`, ws.key, { input }, ws.brainHeaders);
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      return resultOf(ws, String(r.body.job_id));
    };
    expect(JSON.stringify(await run({ amount: 500, vip: false }))).toContain('needs review');
    expect(JSON.stringify(await run({ amount: 500, vip: true }))).toContain('auto-approved');
    expect(JSON.stringify(await run({ amount: 50 }))).toContain('auto-approved');
  });

  it('validate echoes the JSONata it reads', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post('/v1/pathways/validate', ws.key, refundGraph, ws.brainHeaders);
    expect(r.status).toBe(200);
    expect(r.body.valid).toBe(true);
    expect(r.body.warnings).toContain(
      'node "big" (if): data.condition: "input.amount > 100 && !(input.vip == true)" is read as "input.amount > 100 and $not(input.vip = true)"',
    );
  });

  it('a create body sent to validate is a 400 that says to send the graph itself', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post(
      '/v1/pathways/validate',
      ws.key,
      { name: 'x', pathway_graph: refundGraph },
      ws.brainHeaders,
    );
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/unknown keys "name", "pathway_graph": validate takes the graph itself/);
    const flow = await app.post('/v1/pathways/validate', ws.key, { ...refundGraph, viewport: { x: 0, y: 0, zoom: 1 } });
    expect(flow.status).toBe(200);
  });

  it("a human node's title and prompt are rendered with the run's data; stream, current_step and result name the designer's node ids", async () => {
    const ws = await buildWorkspace(app);
    const graph = {
      nodes: [
        { id: 'start', type: 'start' },
        {
          id: 'ask',
          type: 'human',
          data: {
            title: 'Refund {{ input.amount }}?',
            prompt: 'Customer {{ input.customer }} asks for {{ input.amount }}',
          },
        },
        { id: 'ok', type: 'output', data: { value: '"refunded"' } },
      ],
      edges: [
        { source: 'start', target: 'ask' },
        { source: 'ask', target: 'ok' },
      ],
    };
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      { name: `human-${randomUUID().slice(0, 6)}`, pathway_graph: graph },
      ws.brainHeaders,
    );
    expect(p.status, p.text).toBe(201);
    const r = await app.post(
      `/v1/pathways/${String(p.body.id)}/execute`,
      ws.key,
      { input: { amount: 50, customer: 'Ada' } },
      ws.brainHeaders,
    );
    const jobId = String(r.body.job_id);
    let job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    for (const t0 = Date.now(); job.status !== 'waiting' && Date.now() - t0 < 30_000;) {
      await new Promise((res) => setTimeout(res, 100));
      job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    }
    expect(job.waitingFor).toMatchObject({ title: 'Refund 50?', prompt: 'Customer Ada asks for 50', node: 'ask' });
    expect(job.current_step).toBe('node ask (human): waiting');
    const interventionId = String(job.waitingFor!.interventionId);
    const rec = await app.get(`/v1/interventions/${interventionId}`, ws.key);
    expect(rec.body).toMatchObject({ title: 'Refund 50?' });
    await app.post(`/v1/interventions/${interventionId}/respond`, ws.key, { action: 'approve' });
    const result = (await resultOf(ws, jobId)) as { visited: string[]; nodes: Record<string, unknown> };
    expect(result.visited).toEqual(['start', 'ask', 'ok']);
    expect(Object.keys(result.nodes).sort()).toEqual(['ask', 'ok', 'start']);
    const stream = await app.get(`/v1/jobs/${jobId}/stream`, ws.key);
    const starts = stream.text
      .split('\n')
      .filter((l) => l.startsWith('data:') && l.includes('"node_start"'))
      .map((l) => (JSON.parse(l.slice(5)) as { node: string }).node);
    expect(starts).toEqual(['start', 'ask', 'ok']);
  });

  it('parallel branches into a join, and an error policy, end to end on the real services', async () => {
    const ws = await buildWorkspace(app);
    const graph = {
      nodes: [
        { id: 'start', type: 'start' },
        { id: 'left', type: 'transform', data: { expression: 'input.n * 2' } },
        { id: 'right', type: 'transform', data: { expression: 'input.n * 3' } },
        { id: 'risky', type: 'transform', data: { expression: '$number("x")', on_error: 'continue' } },
        { id: 'both', type: 'join' },
        { id: 'out', type: 'output', data: { value: 'last.left + last.right' } },
      ],
      edges: [
        { source: 'start', target: 'left' },
        { source: 'start', target: 'right' },
        { source: 'start', target: 'risky' },
        { source: 'left', target: 'both' },
        { source: 'right', target: 'both' },
        { source: 'risky', target: 'both' },
      ].concat([{ source: 'both', target: 'out' }]),
    };
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      { name: `par-${randomUUID().slice(0, 6)}`, pathway_graph: graph },
      ws.brainHeaders,
    );
    expect(p.status, p.text).toBe(201);
    const r = await app.post(`/v1/pathways/${String(p.body.id)}/execute`, ws.key, { input: { n: 5 } }, ws.brainHeaders);
    expect(r.status, r.text).toBe(202);
    const result = (await resultOf(ws, String(r.body.job_id))) as {
      output: unknown;
      nodes: Record<string, unknown>;
      errors?: Record<string, { policy: string }>;
    };
    expect(result.output).toBe(25);
    expect(result.nodes.both).toMatchObject({ left: 10, right: 15, risky: { error: expect.any(String) } });
    expect(result.errors?.risky).toMatchObject({ policy: 'continue' });
  });

  it('GET /v1/jobs/:id answers the job, as /status does', async () => {
    const ws = await buildWorkspace(app);
    const id = await createPathway(ws);
    const r = await app.post(`/v1/pathways/${id}/execute`, ws.key, { input: { amount: 1 } }, ws.brainHeaders);
    const jobId = String(r.body.job_id);
    await resultOf(ws, jobId);
    const byId = await app.get(`/v1/jobs/${jobId}`, ws.key);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/jobs/${jobId}`, other.key)).status).toBe(404);
  });
});
