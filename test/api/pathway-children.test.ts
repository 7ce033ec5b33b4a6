import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Job, JobList } from '../../src/schemas/jobs.js';
import { buildWorkspace } from '../support/app.js';
import { lastUserText } from '../support/scripted-openai.js';
import { usePlatform } from '../support/platform.js';

const { app, llm } = usePlatform();

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
type N = { id: string; type: string; data?: Record<string, unknown> };
/** A straight line of nodes: each to the next. */
const line = (...nodes: N[]) => ({
  nodes,
  edges: nodes.slice(1).map((n, i) => ({ source: nodes[i].id, target: n.id })),
});

async function createPathway(ws: Ws, graph: ReturnType<typeof line>) {
  const name = `p-${randomUUID().slice(0, 6)}`;
  const r = await app.post('/v1/pathways', ws.key, { name, pathway_graph: graph }, ws.brainHeaders);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body as { id: string }).id;
}
async function execute(ws: Ws, id: string, input: Record<string, unknown>) {
  const r = await app.post(`/v1/pathways/${id}/execute`, ws.key, { input }, ws.brainHeaders);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return String(r.body.job_id);
}
async function done(ws: Ws, jobId: string, timeoutMs = 45_000) {
  const t0 = Date.now();
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() - t0 > timeoutMs) throw new Error(`job ${jobId} is still ${job.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
/** A pathway whose output is `input.n * 10`. */
const timesTen = (ws: Ws) =>
  createPathway(ws, line({ id: 's', type: 'start' }, { id: 'o', type: 'output', data: { value: 'input.n * 10' } }));

describe('pathway and map nodes on the platform', () => {
  it("a pathway node runs the other pathway as a child job linked to its parent; the child's output is the node's value", async () => {
    const ws = await buildWorkspace(app);
    const child = await timesTen(ws);
    const parent = await createPathway(
      ws,
      line(
        { id: 's', type: 'start' },
        { id: 'sub', type: 'pathway', data: { pathway_id: child, input: '{ "n": input.a + 1 }' } },
        { id: 'o', type: 'output', data: { value: '{ "got": last }' } },
      ),
    );
    const jobId = await execute(ws, parent, { a: 4 });
    const job = await done(ws, jobId);
    expect(job.status, job.failedReason).toBe('completed');
    expect(job.result).toMatchObject({ output: { got: 50 }, pathwayId: parent });
    const list = JobList.parse((await app.get(`/v1/jobs?pathway_id=${child}`, ws.key)).body);
    expect(list.jobs).toHaveLength(1);
    const childJob = list.jobs[0];
    expect(childJob).toMatchObject({ kind: 'pathway', status: 'completed', parent_job_id: jobId, pathway_id: child });
    const shown = Job.parse((await app.get(`/v1/jobs/${childJob.job_id}/status`, ws.key)).body);
    expect(shown.parent_job_id).toBe(jobId);
    expect(shown.result).toMatchObject({ output: 50, pathwayVersion: 1 });
    const byParent = JobList.parse((await app.get(`/v1/jobs?parent_job_id=${jobId}`, ws.key)).body);
    expect(byParent.jobs.map((j) => j.job_id)).toEqual([childJob.job_id]);
  });

  it('a pathway node naming a foreign pathway, or its own pathway, is refused naming the node', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const foreign = await timesTen(other);
    const graph = line({ id: 's', type: 'start' }, { id: 'sub', type: 'pathway', data: { pathway_id: foreign } });
    const r = await app.post('/v1/pathways', ws.key, { name: 'bad', pathway_graph: graph }, ws.brainHeaders);
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain(`node \\"sub\\" (pathway): data.pathway_id: foreign or missing pathway`);
    const own = await timesTen(ws);
    const self = line({ id: 's', type: 'start' }, { id: 'me', type: 'pathway', data: { pathway_id: own } });
    const u = await app.put(`/v1/pathways/${own}`, ws.key, { pathway_graph: self }, ws.brainHeaders);
    expect(u.status).toBe(400);
    expect(JSON.stringify(u.body)).toContain('a pathway must not run itself');
  });

  it('a map over a neuron runs 5 items at most 2 at a time; the output is in input order', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (
      await app.post('/v1/neurons', ws.key, {
        name: 'echo',
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You echo.' },
      })
    ).body as { id: string };
    llm.setDefault((body) => {
      // Later items answer sooner, so the order children finish in is not the items' order.
      const text = lastUserText(body);
      return { text: `echo ${text}`, hangMs: 500 - Number(text.split('#')[1] ?? 0) * 100 };
    });
    const p = await createPathway(
      ws,
      line(
        { id: 's', type: 'start' },
        {
          id: 'm',
          type: 'map',
          data: { items: 'input.words', neuron_id: neuron.id, message: '{{ item }} #{{ index }}', concurrency: 2 },
        },
        { id: 'o', type: 'output' },
      ),
    );
    const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const jobId = await execute(ws, p, { words });
    const job = await done(ws, jobId);
    expect(job.status, job.failedReason).toBe('completed');
    expect((job.result as { output: unknown }).output).toEqual(words.map((w, i) => `echo ${w} #${i}`));
    const children = JobList.parse((await app.get(`/v1/jobs?neuron_id=${neuron.id}`, ws.key)).body).jobs;
    expect(children).toHaveLength(5);
    expect(children.every((c) => c.parent_job_id === jobId && c.status === 'completed')).toBe(true);
    // Each child job lives within its child run, so no more than 2 of them ever overlap.
    const overlapping = children.map((a) =>
      children.filter((b) => b.created_at <= a.created_at && a.created_at < (b.finished_at ?? '')),
    );
    expect(Math.max(...overlapping.map((o) => o.length))).toBeLessThanOrEqual(2);
  });

  it('a map over a pathway runs it once per item; the output is the child outputs in order', async () => {
    const ws = await buildWorkspace(app);
    const child = await timesTen(ws);
    const p = await createPathway(
      ws,
      line(
        { id: 's', type: 'start' },
        { id: 'm', type: 'map', data: { items: 'input.ns', pathway_id: child, input: '{ "n": item }' } },
      ),
    );
    const jobId = await execute(ws, p, { ns: [3, 1, 2] });
    const job = await done(ws, jobId);
    expect(job.status, job.failedReason).toBe('completed');
    expect((job.result as { output: unknown }).output).toEqual([30, 10, 20]);
    const children = JobList.parse((await app.get(`/v1/jobs?pathway_id=${child}`, ws.key)).body).jobs;
    expect(children).toHaveLength(3);
    expect(children.every((c) => c.parent_job_id === jobId)).toBe(true);
  });
});
