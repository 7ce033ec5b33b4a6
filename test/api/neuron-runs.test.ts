import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Job, JobList } from '../../src/jobs/schemas.js';
import { Engram, TraceList } from '../../src/traces/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { lastUserText } from '../support/scripted-openai.js';
import { dataOf, readSse } from '../support/sse.js';
import { usePlatform } from '../support/platform.js';

const { app, llm } = usePlatform();
const MODEL = 'openai/gpt-4o-mini';

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
async function createNeuron(ws: Ws, name: string, config: Record<string, unknown> = {}) {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: MODEL, system_prompt: `You are ${name}.`, ...config },
  });
  expect(r.status).toBe(201);
  return r.body as { id: string; name: string };
}

async function waitForJob(
  ws: Ws,
  jobId: string,
  until: (s: string) => boolean = (s) => s === 'completed' || s === 'failed',
  timeoutMs = 30_000,
) {
  const started = Date.now();
  for (;;) {
    const r = await app.get(`/v1/jobs/${jobId}/status`, ws.key);
    const job = Job.parse(r.body);
    if (until(job.status)) return job;
    if (Date.now() - started > timeoutMs) throw new Error(`job ${jobId} still ${job.status}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('neuron invoke runs as a durable workflow', () => {
  it('streams tokens in order over SSE, completes, stores both engrams with usage and cost', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'streamer');
    llm.setDefault(() => ({
      chunks: ['Hello', ', ', 'wor', 'ld', '!'],
      delayMsPerChunk: 20,
      usage: { prompt_tokens: 12, completion_tokens: 5 },
    }));
    const inv = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: 'Say hello', stream: true });
    expect(inv.status).toBe(202);
    expect(inv.body).toMatchObject({ status: 'pending' });
    const jobId = String(inv.body.job_id);
    expect(typeof inv.body.user_engram_id).toBe('string');

    const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      timeoutMs: 30_000,
    });
    expect(sse.ended).toBe(true);
    const types = sse.events.map((e) => dataOf(e).type);
    expect(types.at(-1)).toBe('complete');
    expect(types.indexOf('status')).toBeLessThan(types.indexOf('token'));
    expect(sse.events.filter((e) => dataOf(e).type === 'status').map((e) => dataOf(e).status)).toEqual(['running']);
    const tokens = sse.events.filter((e) => dataOf(e).type === 'token').map((e) => dataOf(e).text);
    expect(tokens.join('')).toBe('Hello, world!');
    expect(tokens).toEqual(['Hello', ', ', 'wor', 'ld', '!']);

    const job = await waitForJob(ws, jobId);
    expect(job).toMatchObject({ status: 'completed', progress: 100 });
    expect(job.result).toMatchObject({ text: 'Hello, world!' });
    expect(job.processed_at).not.toBeNull();
    expect(job.finished_at).not.toBeNull();

    const traceId = String(inv.body.trace_id);
    const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams.map(
      (e) => Engram.parse(e),
    );
    expect(msgs.map((m) => m.source_type)).toEqual(['user', 'neuron']);
    expect(msgs[0].id).toBe(inv.body.user_engram_id);
    expect(msgs[1].content).toEqual({ type: 'neuron', content: 'Hello, world!' });
    expect(msgs[1].metadata).toMatchObject({
      usage: { inputTokens: 12, outputTokens: 5, totalTokens: 17 },
      content_blocks: [{ type: 'text', text: 'Hello, world!' }],
    });
    const trace = (await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace as {
      message_count: number;
      cost_summary: { total_tokens: number; total_cost_usd: number };
      title?: string;
    };
    expect(trace.message_count).toBe(2);
    expect(trace.cost_summary.total_tokens).toBe(17);
    expect(trace.cost_summary.total_cost_usd).toBeGreaterThan(0);
    expect(trace.title).toBe('Say hello');
  });

  it('a tool call round trip runs the tool as an activity and feeds the result back', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'mathy', { tools: ['calculator'] });
    llm.setDefault((body) => {
      const toolMsg = body.messages.find((m) => m.role === 'tool');
      if (!toolMsg) return { toolCalls: [{ name: 'calculator', arguments: { expression: '(2 + 3) * 4' } }] };
      return { text: `The answer is ${JSON.parse(String(toolMsg.content)).result}` };
    });
    const inv = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: 'What is (2+3)*4?' });
    const job = await waitForJob(ws, String(inv.body.job_id));
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({ text: 'The answer is 20', toolCalls: [{ name: 'calculator' }] });
    const sent = llm.requests.filter((r) => r.tools?.length);
    expect(JSON.stringify(sent.at(-1)?.tools)).toContain('calculator');
  });

  it('a delegate_* tool runs the sub-neuron as a child workflow on the same trace', async () => {
    const ws = await buildWorkspace(app);
    const child = await createNeuron(ws, 'researcher');
    const parent = await createNeuron(ws, 'lead', { sub_neuron_ids: [child.id] });
    llm.setDefault((body) => {
      const system = String(body.messages.find((m) => m.role === 'system')?.content ?? '');
      if (system.includes('You are researcher')) return { text: `findings about ${lastUserText(body)}` };
      const toolMsg = body.messages.find((m) => m.role === 'tool');
      if (!toolMsg) return { toolCalls: [{ name: 'delegate_researcher', arguments: { message: 'octopuses' } }] };
      return { text: `Summary: ${String(toolMsg.content)}` };
    });
    const inv = await app.post(`/v1/neurons/${parent.id}/invoke`, ws.key, { message: 'Research octopuses' });
    const jobId = String(inv.body.job_id);
    const job = await waitForJob(ws, jobId);
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({ text: 'Summary: findings about octopuses' });
    const jobs = JobList.parse((await app.get(`/v1/jobs?neuron_id=${child.id}`, ws.key)).body);
    expect(jobs.total).toBe(1);
    const childJob = jobs.jobs[0];
    expect(childJob).toMatchObject({ parent_job_id: jobId, trace_id: inv.body.trace_id, status: 'completed' });
    const desc = await app.deps.temporal.client.workflow.getHandle(childJob.job_id).describe();
    expect(desc.parentExecution?.workflowId).toBe(jobId);
    const msgs = (
      await app.get<{ engrams: unknown[] }>(`/v1/traces/${String(inv.body.trace_id)}/messages`, ws.key)
    ).body.engrams.map((e) => Engram.parse(e));
    expect(msgs.map((m) => [m.source_type, m.source_id])).toEqual([
      ['user', expect.any(String)],
      ['neuron', child.id],
      ['neuron', parent.id],
    ]);
  });

  it('cancel mid-stream: the stream ends with error, status failed with a cancelled reason, never later completed', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'slowpoke');
    llm.setDefault(() => ({ chunks: Array.from({ length: 60 }, (_, i) => `t${i} `), delayMsPerChunk: 100 }));
    const inv = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: 'go slowly' });
    const jobId = String(inv.body.job_id);
    let cancelStatus = 0;
    let cancelled: Promise<void> | undefined;
    const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      timeoutMs: 30_000,
      until: (ev) => {
        if (cancelStatus === 0 && ev.some((e) => dataOf(e).type === 'token')) {
          cancelStatus = -1;
          cancelled = app.post(`/v1/jobs/${jobId}/cancel`, ws.key).then((r) => {
            cancelStatus = r.status;
          });
        }
        return false;
      },
    });
    await cancelled;
    expect(sse.ended).toBe(true);
    expect(dataOf(sse.events.at(-1)!)).toMatchObject({ type: 'error', error: 'cancelled' });
    expect(sse.events.filter((e) => dataOf(e).type === 'token').length).toBeLessThan(60);
    expect(cancelStatus).toBe(200);
    const job = await waitForJob(ws, jobId);
    expect(job.status).toBe('failed');
    expect(job.failedReason).toMatch(/cancel/i);
    await new Promise((r) => setTimeout(r, 1500));
    expect(Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body).status).toBe('failed');
    const again = await app.post(`/v1/jobs/${jobId}/cancel`, ws.key);
    expect(again.status).toBe(400);
    const desc = await app.deps.temporal.client.workflow.getHandle(jobId).describe();
    expect(desc.status.name).toBe('CANCELLED');
  });

  it('resume from a cursor returns exactly the later entries', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'resumer');
    llm.setDefault(() => ({ chunks: ['a', 'b', 'c', 'd'] }));
    const inv = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: 'abcd' });
    const jobId = String(inv.body.job_id);
    await waitForJob(ws, jobId);
    const headers = { authorization: `Bearer ${ws.key}` };
    const all = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, { headers });
    expect(all.ended).toBe(true);
    const k = all.events.findIndex((e) => dataOf(e).type === 'token');
    const rest = await readSse(`${app.url}/v1/jobs/${jobId}/stream?after=${all.events[k].id}`, { headers });
    expect(rest.events.map((e) => e.id)).toEqual(all.events.slice(k + 1).map((e) => e.id));
    expect((await app.get(`/v1/jobs/${jobId}/stream?after=nope`, ws.key)).status).toBe(400);
  });

  it('the same client_nonce on the same trace returns the same job', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'nonce');
    llm.setDefault(() => ({ text: 'once' }));
    const traceId = randomUUID();
    const a = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, {
      message: 'hi',
      trace_id: traceId,
      client_nonce: 'n-1',
    });
    const b = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, {
      message: 'hi',
      trace_id: traceId,
      client_nonce: 'n-1',
    });
    expect(b.body.job_id).toBe(a.body.job_id);
    await waitForJob(ws, String(a.body.job_id));
    const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams;
    expect(msgs).toHaveLength(2);
    const c = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, {
      message: 'hi',
      trace_id: traceId,
      client_nonce: 'n-2',
    });
    expect(c.body.job_id).not.toBe(a.body.job_id);
    await waitForJob(ws, String(c.body.job_id));
  });

  it('trace_type system keeps the turns out of default listings; completion neurons return structured output', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'sys');
    llm.setDefault(() => ({ text: '{"answer": 42}' }));
    const inv = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, {
      message: 'x',
      neuron_task_options: { traceType: 'system' },
    });
    await waitForJob(ws, String(inv.body.job_id));
    const listed = TraceList.parse((await app.get('/v1/traces', ws.key)).body);
    expect(listed.traces.map((t) => t.trace_id)).not.toContain(inv.body.trace_id);
    const sys = TraceList.parse((await app.get('/v1/traces?trace_type=system', ws.key)).body);
    expect(sys.traces.map((t) => t.trace_id)).toContain(inv.body.trace_id);

    const comp = await createNeuron(ws, 'extractor', { neuron_type: 'completion' });
    const ci = await app.post(`/v1/neurons/${comp.id}/invoke`, ws.key, { data: { text: 'the answer' } });
    const job = await waitForJob(ws, String(ci.body.job_id));
    expect(job.result).toMatchObject({ output: { answer: 42 } });
    const t = (await app.get(`/v1/traces/${String(ci.body.trace_id)}`, ws.key)).body.trace as { trace_type: string };
    expect(t.trace_type).toBe('system');
    expect(llm.requests.at(-1)?.response_format).toEqual({ type: 'json_object' });
  });

  it('validates the invoke body and scopes the neuron to the workspace', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const n = await createNeuron(ws, 'guarded');
    const bad = [
      { message: 'x', neuron_task_options: { persistence: 'none' } },
      { message: 'x', neuron_task_options: { trace_type: 'bogus' } },
      { message: 'x', engagement_resource_id: randomUUID() },
      {},
      { message: 'x', trace_id: 'nope' },
    ];
    for (const body of bad) {
      const r = await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    expect((await app.post(`/v1/neurons/${n.id}/invoke`, other.key, { message: 'x' })).status).toBe(404);
    expect((await app.post(`/v1/neurons/${randomUUID()}/invoke`, ws.key, { message: 'x' })).status).toBe(404);
    expect((await app.get(`/v1/jobs/${randomUUID()}/status`, ws.key)).status).toBe(404);
  });

  it('jobs carry search attributes and are listed with filters and totals', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'lister');
    llm.setDefault(() => ({ text: 'ok' }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(String((await app.post(`/v1/neurons/${n.id}/invoke`, ws.key, { message: `m${i}` })).body.job_id));
    for (const id of ids) await waitForJob(ws, id);
    const list = JobList.parse((await app.get('/v1/jobs?limit=2', ws.key)).body);
    expect(list).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(list.jobs).toHaveLength(2);
    expect(JobList.parse((await app.get('/v1/jobs?status=failed', ws.key)).body).total).toBe(0);
    expect(JobList.parse((await app.get('/v1/jobs?status=completed&offset=2', ws.key)).body).jobs).toHaveLength(1);
    expect((await app.get('/v1/jobs?status=bogus', ws.key)).status).toBe(400);
    const desc = await app.deps.temporal.client.workflow.getHandle(ids[0]).describe();
    const attrs = desc.typedSearchAttributes;
    const val = (name: string) => attrs.getAll().find((p) => p.key.name === name)?.value;
    expect(val('WorkspaceId')).toBe(ws.workspaceId);
    expect(val('NeuronId')).toBe(n.id);
    expect(val('JobKind')).toBe('neuron');
    expect(val('TraceId')).toBeTruthy();
    expect(
      await app.deps.temporal.client.workflow
        .getHandle(ids[0])
        .describe()
        .then((d) => d.staticSummary()),
    ).toBe(`neuron lister · trace ${val('TraceId')}`);
  });
});
