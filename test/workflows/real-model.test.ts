import { describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { useSimPlatform } from '../support/platform.js';
import { shownReply } from '../support/sse.js';
import { settleJob } from '../support/jobs.js';

/**
 * The run engine against a provider that behaves like a real one (test/support/provider-sim.ts):
 * text that differs on every call, mid-stream disconnects, 429 with Retry-After, 5xx, 4xx, a
 * tool call with bad arguments, a failed start, a large trace, a cancel.
 */
const { app, sim } = useSimPlatform({ tokens: 8, interTokenMs: 5, retryAfterS: 2 });

async function neuron(ws: Awaited<ReturnType<typeof buildWorkspace>>, config: Record<string, unknown> = {}) {
  const res = await app.post('/v1/neurons', ws.key, {
    name: `n-${Math.random().toString(36).slice(2, 8)}`,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim', ...config },
  });
  expect(res.status).toBe(201);
  return String(res.body.id);
}

const settle = (key: string, jobId: string) => settleJob(app, key, jobId);

const entriesOf = async (jobId: string) =>
  (await app.services.streams.range(app.services.jobs.streamKey(jobId), undefined, 100_000)).map((e) => e.data);

async function storedReply(key: string, traceId: string): Promise<string> {
  const msgs = (
    await app.get<{ engrams: { source_type: string; content: { content: string } }[] }>(
      `/v1/traces/${traceId}/messages`,
      key,
    )
  ).body.engrams;
  const replies = msgs.filter((m) => m.source_type === 'neuron');
  expect(replies).toHaveLength(1);
  return replies[0].content.content;
}

function expectOneTerminalLast(entries: Record<string, unknown>[]) {
  const terminal = entries.filter((e) => e.type === 'complete' || e.type === 'error');
  expect(terminal).toHaveLength(1);
  expect(entries.at(-1)).toBe(terminal[0]);
}

describe('runs under real provider behaviour', () => {
  it('a dropped stream, a 429 with Retry-After and a 500 are retried; the stream resets each retried turn and shows exactly the stored reply', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws);
    sim.configure({ faults: ['disconnect', '429', '500'] });
    const before = sim.times.length;
    const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'flaky provider' });
    expect(inv.status).toBe(202);
    const job = await settle(ws.key, String(inv.body.job_id));
    expect(job.status).toBe('completed');
    const entries = await entriesOf(String(inv.body.job_id));
    const resets = entries.filter((e) => e.type === 'reset');
    expect(resets.map((r) => r.attempt)).toEqual([2, 3, 4]);
    // Every token names its attempt; after a turn's reset, only that attempt's tokens follow.
    const afterLastReset = entries.slice(entries.indexOf(resets.at(-1)!)).filter((e) => e.type === 'token');
    expect(afterLastReset.every((t) => t.attempt === 4)).toBe(true);
    const stored = await storedReply(ws.key, String(inv.body.trace_id));
    expect(shownReply(entries)).toBe(stored);
    expect(afterLastReset.map((t) => t.text).join('')).toBe(stored);
    // The disconnected attempt streamed part of a different text: it never shows.
    expect(sim.said.filter((s) => s.user === 'flaky provider').map((s) => s.text)).toContain(stored);
    expectOneTerminalLast(entries);
    // The retry after the 429 waited for its Retry-After (2 s), not the 1 s initial backoff.
    const t = sim.times.slice(before);
    expect(t[2] - t[1]).toBeGreaterThanOrEqual(1900);
  }, 90_000);

  it('a provider 4xx (other than 408/409/429) fails the run at once with the provider message', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws);
    sim.configure({ faults: ['400'] });
    const before = sim.times.length;
    const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'bad request' });
    const job = await settle(ws.key, String(inv.body.job_id));
    expect(job.status).toBe('failed');
    expect(job.failedReason).toContain("Invalid value for 'temperature'");
    expect(sim.times.length - before).toBe(1);
    expectOneTerminalLast(await entriesOf(String(inv.body.job_id)));
  });

  it('a malformed calculator call reaches the model as a tool error, without retries, and the run completes', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws, { tools: ['calculator'] });
    const seen: string[] = [];
    sim.configure({
      toolCalls: (body) => {
        if (!JSON.stringify(body.messages).includes('malformed tool')) return null;
        const tool = body.messages.find((m) => m.role === 'tool');
        if (tool) {
          seen.push(String(tool.content));
          return null;
        }
        return [{ name: 'calculator', arguments: { expression: '2 +* (3' } }];
      },
    });
    try {
      const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'malformed tool' });
      const job = await settle(ws.key, String(inv.body.job_id));
      expect(job.status).toBe('completed');
      expect(seen).toHaveLength(1);
      expect(JSON.parse(seen[0])).toHaveProperty('error');
      const tools = (await entriesOf(String(inv.body.job_id))).filter((e) => e.type === 'tool');
      expect(tools).toHaveLength(1);
    } finally {
      sim.configure({ toolCalls: undefined });
    }
  });

  /**
   * Workflow starts sent by the API as `refuse` says: the first `n` refused as by an unreachable
   * server, or every one lost (`'lost'`: never answered, as when the process that sent it died).
   * `tried` counts them; `restore` puts the real start back.
   */
  const interceptStarts = (refuse: number | 'lost') => {
    const client = app.deps.temporal.client.workflow;
    const start = client.start.bind(client);
    const calls = {
      tried: 0,
      restore: () => {
        client.start = start;
      },
    };
    client.start = ((...args: Parameters<typeof start>) => {
      calls.tried++;
      if (refuse === 'lost') return new Promise(() => undefined);
      return calls.tried <= refuse ? Promise.reject(new Error('14 UNAVAILABLE: connection refused')) : start(...args);
    }) as typeof client.start;
    return calls;
  };

  it('a workflow start Temporal refuses is retried: the 202 run completes, once, and is never failed for it', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws);
    const starts = interceptStarts(2);
    let res;
    try {
      res = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'start fails twice' });
      expect(res.status).toBe(202);
      // GET status right after the 202 finds the job.
      const seen = Job.parse((await app.get(`/v1/jobs/${String(res.body.job_id)}/status`, ws.key)).body);
      expect(['pending', 'running']).toContain(seen.status);
      const job = await settle(ws.key, String(res.body.job_id));
      expect(job.status, String(job.failedReason)).toBe('completed');
    } finally {
      starts.restore();
    }
    expect(starts.tried).toBeGreaterThanOrEqual(3);
    const entries = await entriesOf(String(res.body.job_id));
    expectOneTerminalLast(entries);
    expect(shownReply(entries)).toBe(await storedReply(ws.key, String(res.body.trace_id)));
  });

  it('a run cancelled while Temporal refused its start is not started when Temporal is back, by the retries or by the sweep', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws);
    // The first start is refused; the retry 250 ms later would be accepted.
    const starts = interceptStarts(1);
    let jobId = '';
    try {
      const res = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'cancelled before its start' });
      expect(res.status).toBe(202);
      jobId = String(res.body.job_id);
      const cancelled = await app.post(`/v1/jobs/${jobId}/cancel`, ws.key);
      expect(cancelled.status).toBe(200);
      // Past the last retry (0, 250 and 1,000 ms after the 202).
      await new Promise((r) => setTimeout(r, 1_600));
    } finally {
      starts.restore();
    }
    expect(starts.tried).toBe(1); // the retry found the job cancelled and did not start it
    expect(await app.services.jobs.workflowExists(jobId)).toBe(false);
    expect((await app.services.runs.startPending({ minAgeMs: 0 })).started).toBe(0);
    expect(await app.services.jobs.workflowExists(jobId)).toBe(false);
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    expect(job.status).toBe('failed');
    expect(String(job.failedReason)).toMatch(/^cancelled/);
  });

  it('an API that answered 202 and died before the workflow started: the start sweep starts the stored run', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws);
    // The start never reaches Temporal (the process that sent it is gone).
    const starts = interceptStarts('lost');
    let res;
    try {
      res = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'api died after 202' });
    } finally {
      starts.restore();
    }
    expect(res.status).toBe(202);
    const jobId = String(res.body.job_id);
    expect(await app.services.jobs.workflowExists(jobId)).toBe(false);
    const swept = await app.services.runs.startPending({ minAgeMs: 0 });
    expect(swept.started).toBeGreaterThanOrEqual(1);
    const job = await settle(ws.key, jobId);
    expect(job.status, String(job.failedReason)).toBe('completed');
    const entries = await entriesOf(jobId);
    expectOneTerminalLast(entries);
    expect(shownReply(entries)).toBe(await storedReply(ws.key, String(res.body.trace_id)));
    // A second sweep finds nothing left to start.
    expect((await app.services.runs.startPending({ minAgeMs: 0 })).started).toBe(0);
  });

  it('a failed load after the job record was written ends the job failed, never pending', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws);
    // The run's load reads the trace's history (the trace is named by the caller): that read fails.
    const traces = app.services.traces;
    const messages = traces.messages.bind(traces);
    traces.messages = () => Promise.reject(new Error('store went away'));
    const traceId = crypto.randomUUID();
    let res;
    try {
      res = await app.post(`/v1/neurons/${id}/invoke`, ws.key, {
        message: 'load fails',
        trace_id: traceId,
        client_nonce: 'n-2',
      });
    } finally {
      traces.messages = messages;
    }
    expect(res.status).toBeGreaterThanOrEqual(500);
    // The job the failed invoke recorded: the neuron's only job (its id is derived from the caller and the nonce).
    const listed = (await app.get<{ jobs: { job_id: string }[] }>(`/v1/jobs?neuron_id=${id}`, ws.key)).body.jobs;
    expect(listed).toHaveLength(1);
    const job = Job.parse((await app.get(`/v1/jobs/${listed[0]!.job_id}/status`, ws.key)).body);
    expect(job.status).toBe('failed');
    const again = await app.post(`/v1/neurons/${id}/invoke`, ws.key, {
      message: 'load fails',
      trace_id: traceId,
      client_nonce: 'n-2',
    });
    expect((await settle(ws.key, String(again.body.job_id))).status).toBe('completed');
  });

  it('a run on a trace with 200 long messages and a 100 KB system prompt completes; no workflow payload carries the prompt', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws, { system_prompt: `You are thorough. ${'rules '.repeat(17_000)}` });
    const traceId = crypto.randomUUID();
    const scope = await app.services.auth.authenticate(ws.key);
    for (let i = 0; i < 200; i++) {
      await app.services.traces.append(scope, traceId, {
        content: { type: 'human', content: `message ${i} ${'lorem ipsum dolor '.repeat(300)}` },
        sourceType: 'user',
        sourceId: null,
      });
    }
    const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, {
      message: 'summarise all of it',
      trace_id: traceId,
    });
    expect(inv.status).toBe(202);
    expect((await settle(ws.key, String(inv.body.job_id))).status).toBe('completed');
    const history = await app.deps.temporal.client.workflow.getHandle(String(inv.body.job_id)).fetchHistory();
    const sizes = JSON.stringify(history).length;
    // The prompt alone is over 100 KB and the history over 1 MB: neither is in the workflow history.
    expect(sizes).toBeLessThan(60_000);
    const sent = sim.requests.at(-1)!;
    expect(JSON.stringify(sent.messages).length).toBeGreaterThan(300_000);
  }, 120_000);

  it('a cancelled run ends Canceled in Temporal, with one terminal entry', async () => {
    const ws = await buildWorkspace(app);
    const id = await neuron(ws);
    sim.configure({ interTokenMs: 200, tokens: 40 });
    try {
      const inv = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'cancel me' });
      const jobId = String(inv.body.job_id);
      for (let i = 0; i < 100 && !(await entriesOf(jobId)).some((e) => e.type === 'token'); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect((await app.post(`/v1/jobs/${jobId}/cancel`, ws.key)).status).toBe(200);
      const handle = app.deps.temporal.client.workflow.getHandle(jobId);
      await handle.result().catch(() => undefined);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
      await new Promise((r) => setTimeout(r, 500));
      const entries = await entriesOf(jobId);
      expectOneTerminalLast(entries);
      expect(entries.at(-1)).toMatchObject({ type: 'error', error: 'cancelled' });
      expect((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body.status).toBe('failed');
    } finally {
      sim.configure({ interTokenMs: 5, tokens: 8 });
    }
  });
});
