import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { Job, JobList } from '../../src/jobs/schemas.js';
import type { NeuronRunInput } from '../../src/temporal/definitions.js';
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

/** A neuron offered the calculator tool. */
async function calculating(ws: Ws): Promise<{ id: string }> {
  const r = await app.post('/v1/neurons', ws.key, {
    name: 'mathy',
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You compute.', tools: ['calculator'] },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { id: string };
}

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

  it("a one-turn item's working set never reaches the store; an item whose first turn calls a tool stores it and goes on", async () => {
    const ws = await buildWorkspace(app);
    const neuron = await calculating(ws);
    llm.setDefault((body) => {
      const text = lastUserText(body);
      const toolMsg = body.messages.find((m) => m.role === 'tool');
      if (text.startsWith('compute') && !toolMsg)
        return { toolCalls: [{ name: 'calculator', arguments: { expression: '6 * 7' } }] };
      return { text: toolMsg ? `got ${String(toolMsg.content)}` : `plain ${text}` };
    });
    const p = await createPathway(
      ws,
      line(
        { id: 's', type: 'start' },
        { id: 'm', type: 'map', data: { items: 'input.words', neuron_id: neuron.id, message: '{{ item }}' } },
        { id: 'o', type: 'output' },
      ),
    );
    const runs = app.deps.repos.runs;
    const contexts = vi.spyOn(runs, 'putContext');
    const models = vi.spyOn(runs, 'putModel');
    const drops = vi.spyOn(runs, 'drop');
    try {
      const jobId = await execute(ws, p, { words: ['one', 'compute it', 'two'] });
      const job = await done(ws, jobId);
      expect(job.status, job.failedReason).toBe('completed');
      const output = (job.result as { output: string[] }).output;
      expect(output[0]).toBe('plain one');
      expect(output[1]).toMatch(/^got .*42/);
      expect(output[2]).toBe('plain two');
      const children = JobList.parse((await app.get(`/v1/jobs?neuron_id=${neuron.id}`, ws.key)).body).jobs;
      expect(children).toHaveLength(3);
      const tooled = children.find((c) => JSON.stringify(c.result).includes('calculator'))!;
      expect(tooled, JSON.stringify(children)).toBeDefined();
      // Only the item that went on past its first turn stored a context and model steps, and
      // only its working set was dropped: the one-turn items wrote none to drop.
      const mine = new Set(children.map((c) => c.job_id));
      const stored = (spy: typeof contexts | typeof models | typeof drops) =>
        new Set(spy.mock.calls.map((c) => String(c[0] === ws.workspaceId ? c[1] : c[0])).filter((id) => mine.has(id)));
      expect([...stored(contexts)]).toEqual([tooled.job_id]);
      expect([...stored(models)]).toEqual([tooled.job_id]);
      // The first turn (the tool call), then the answer.
      expect(models.mock.calls.filter((c) => c[0] === tooled.job_id)).toHaveLength(2);
      expect([...stored(drops)]).toEqual([tooled.job_id]);
      for (const c of children) expect(await runs.context(c.job_id)).toBeNull();
    } finally {
      contexts.mockRestore();
      models.mockRestore();
      drops.mockRestore();
    }
  });

  it("a map item's step after an earlier attempt stored its working set and died: the stored context rules", async () => {
    const ws = await buildWorkspace(app);
    const neuron = await calculating(ws);
    llm.setDefault(() => ({ toolCalls: [{ name: 'calculator', arguments: { expression: '6 * 7' } }] }));
    const runs = app.services.runs;
    const input: NeuronRunInput = {
      jobId: randomUUID(),
      scope: {
        workspaceId: ws.workspaceId,
        brainId: ws.brainId,
        userId: null,
        apiKeyId: null,
        roles: ['admin'],
        credential: 'api_key',
      },
      neuronId: neuron.id,
      neuronVersion: 1,
      traceId: randomUUID(),
      traceType: 'thread',
      message: 'compute it',
      userEngramId: null,
      depth: 1,
      maxTurns: 8,
      pathwayContext: { pathwayId: 'inline', nodeIndex: 1 },
      localTurns: true,
      oneStep: true,
    };
    // The earlier attempt: it claimed the turn's first attempt and stored a context (marked by
    // its prompt) before it died.
    const earlier = await runs.load(input, 'compute it');
    const marked = {
      ...earlier,
      messages: [{ role: 'system' as const, content: 'earlier attempt' }, ...earlier.messages],
    };
    await app.deps.repos.runs.putContext(ws.workspaceId, input.jobId, marked);
    await app.services.jobs.claimTurnAttempt(input.jobId, 0);
    const short = await runs.runShort(input, randomUUID());
    // Its reply (a tool call, made on a fresh context) is not given back: the workflow runs the
    // turn again on the stored context; the run is not finished, the context is the earlier one.
    expect(short.reply).toBeUndefined();
    expect(short.result).toBeUndefined();
    expect(short.summary.model).toBe(earlier.model);
    expect((await app.deps.repos.runs.context(input.jobId))?.messages[0]).toEqual({
      role: 'system',
      content: 'earlier attempt',
    });
    // A one-turn answer on a later attempt finishes the run and drops what the earlier attempt left.
    llm.setDefault(() => ({ text: 'forty-two' }));
    const again = await runs.runShort(input, randomUUID());
    expect(again.result).toMatchObject({ text: 'forty-two' });
    expect(again.reply?.attempt).toBe(3);
    expect(await app.deps.repos.runs.context(input.jobId)).toBeNull();
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

  it('data.input written as an object of templates (map and pathway nodes), as well as an expression', async () => {
    const ws = await buildWorkspace(app);
    const child = await createPathway(
      ws,
      line(
        { id: 's', type: 'start' },
        {
          id: 'o',
          type: 'output',
          data: { value: 'input.customer & "/" & input.tags[0] & "/" & $string(input.n * 10)' },
        },
      ),
    );
    const p = await createPathway(
      ws,
      line(
        { id: 's', type: 'start' },
        {
          id: 'm',
          type: 'map',
          data: {
            items: 'input.people',
            pathway_id: child,
            // A leaf that is one placeholder keeps its type (n stays a number); others are text.
            input: { customer: 'Dear {{ item.name }}', tags: ['#{{ index }}', 'fixed'], n: '{{ item.n }}' },
          },
        },
        {
          id: 'sub',
          type: 'pathway',
          data: { pathway_id: child, input: { customer: '{{ input.who }}', tags: ['one'], n: '{{ 4 }}' } },
        },
        { id: 'o', type: 'output', data: { value: '{ "map": $$.m, "sub": last }' } },
      ),
    );
    const stored = (await app.get(`/v1/pathways/${p}`, ws.key, ws.brainHeaders)).body as {
      pathway_graph: { nodes: { id: string; data: Record<string, unknown> }[] };
    };
    expect(stored.pathway_graph.nodes.find((n) => n.id === 'm')?.data.input).toEqual({
      customer: 'Dear {{ item.name }}',
      tags: ['#{{ index }}', 'fixed'],
      n: '{{ item.n }}',
    });
    const job = await done(
      ws,
      await execute(ws, p, {
        who: 'Ann',
        people: [
          { name: 'Bo', n: 1 },
          { name: 'Cy', n: 2 },
        ],
      }),
    );
    expect(job.status, job.failedReason).toBe('completed');
    expect((job.result as { output: { sub: unknown } }).output.sub).toBe('Ann/one/40');
    const children = JobList.parse((await app.get(`/v1/jobs?pathway_id=${child}`, ws.key)).body).jobs;
    expect(children).toHaveLength(3);
    const outputs = children.map((c) => (c.result as { output: unknown } | null)?.output).sort();
    expect(outputs).toEqual(['Ann/one/40', 'Dear Bo/#0/10', 'Dear Cy/#1/20']);

    // Validation: anything but an expression string or an object/array is a 400 naming the field;
    // a broken placeholder inside the object names its leaf.
    for (const [input, says] of [
      [42, 'data.input'],
      [{ customer: '{{ item.name ( }}' }, 'data.input.customer'],
    ] as const) {
      const r = await app.post(
        '/v1/pathways',
        ws.key,
        {
          name: `bad-${randomUUID().slice(0, 6)}`,
          pathway_graph: line(
            { id: 's', type: 'start' },
            { id: 'm', type: 'map', data: { items: 'input.people', pathway_id: child, input } },
          ),
        },
        ws.brainHeaders,
      );
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(JSON.stringify(r.body)).toContain(says);
    }
  });
});
