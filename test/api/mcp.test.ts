import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';
import { lastUserText } from '../support/scripted-openai.js';

const { app, llm } = usePlatform();

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
let ws: Ws;
const clients: { client: Client; transport: StreamableHTTPClientTransport }[] = [];

/** An MCP client of the official SDK on the platform's /v1/mcp with the workspace's API key. */
async function connect(headers: Record<string, string>, onListChanged?: () => void) {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  if (onListChanged) client.setNotificationHandler(ToolListChangedNotificationSchema, async () => onListChanged());
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/v1/mcp`), { requestInit: { headers } });
  await client.connect(transport);
  clients.push({ client, transport });
  return client;
}
const keyHeaders = () => ({ authorization: `Bearer ${ws.key}`, 'x-brain-id': ws.brainId });

async function createPathway(name: string, nodes: object[], edges: object[], description = '') {
  const r = await app.post(
    '/v1/pathways',
    ws.key,
    { name, description, pathway_graph: { nodes, edges } },
    ws.brainHeaders,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String(r.body.id);
}
const chain = (ids: string[]) => ids.slice(1).map((t, i) => ({ id: `e${i}`, source: ids[i], target: t }));

async function status(jobId: string) {
  return Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
}

let longId = '';
beforeAll(async () => {
  ws = await buildWorkspace(app);
  const n = await app.post('/v1/neurons', ws.key, {
    name: 'Helper Bot',
    description: 'Answers questions about orders.',
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You help.' },
  });
  expect(n.status, JSON.stringify(n.body)).toBe(201);
  llm.setDefault((body) => ({ text: `reply to: ${lastUserText(body)}`, delayMsPerChunk: 20 }));
  await createPathway(
    'Slow steps',
    [
      {
        id: 's',
        type: 'start',
        data: {
          input_schema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
        },
      },
      { id: 'd1', type: 'delay', data: { ms: 200 } },
      { id: 'd2', type: 'delay', data: { ms: 200 } },
      { id: 'o', type: 'output', data: { value: 'input.n * 2' } },
    ],
    chain(['s', 'd1', 'd2', 'o']),
    'Doubles n, slowly.',
  );
  longId = await createPathway(
    'long wait!',
    [
      { id: 's', type: 'start' },
      { id: 'd', type: 'delay', data: { seconds: 120 } },
      { id: 'o', type: 'output', data: { value: '"done"' } },
    ],
    chain(['s', 'd', 'o']),
  );
});
afterAll(async () => {
  for (const c of clients) {
    await c.transport.terminateSession().catch(() => undefined);
    await c.client.close().catch(() => undefined);
  }
});

describe('MCP server at /v1/mcp', () => {
  it('refuses a request without a valid API key (401)', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const none = await fetch(`${app.url}/v1/mcp`, { method: 'POST', headers, body: JSON.stringify(init) });
    expect(none.status).toBe(401);
    const bad = await fetch(`${app.url}/v1/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: 'Bearer not-a-key' },
      body: JSON.stringify(init),
    });
    expect(bad.status).toBe(401);
    await expect(connect({})).rejects.toThrow(/401|Unauthorized|authentication/i);
  });

  it('lists each active neuron and pathway as a tool with its schema', async () => {
    const client = await connect(keyHeaders());
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    const neuron = byName.get('helper-bot');
    expect(neuron?.description).toContain('Answers questions about orders.');
    expect(neuron?.inputSchema).toMatchObject({ type: 'object', required: ['message'] });
    expect(Object.keys(neuron?.inputSchema.properties ?? {})).toEqual(['message', 'data']);
    // A declared input schema is the tool's; a pathway without one takes { input }; names follow MCP's rules.
    expect(byName.get('slow-steps')?.inputSchema).toMatchObject({ type: 'object', required: ['n'] });
    expect(byName.get('slow-steps')?.description).toContain('Doubles n, slowly.');
    expect(Object.keys(byName.get('long-wait')?.inputSchema.properties ?? {})).toEqual(['input']);
    for (const t of tools) expect(t.name).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
  });

  it('calls the neuron tool: the reply as text and the job in structuredContent', async () => {
    const client = await connect(keyHeaders());
    const r = await client.callTool({ name: 'helper-bot', arguments: { message: 'where is order 7?' } });
    expect(r.isError).toBeFalsy();
    expect(r.content).toEqual([{ type: 'text', text: 'reply to: where is order 7?' }]);
    const sc = r.structuredContent as { job_id: string; trace_id: string; result: { text: string } };
    expect(sc.result.text).toBe('reply to: where is order 7?');
    // The stream's terminal entry (what the call answers from) is written just before the record shows the end.
    const job = await settleJob(app, ws.key, sc.job_id);
    expect(job.status).toBe('completed');
    expect(job.trace_id).toBe(sc.trace_id);
    const listed = (await app.get(`/v1/jobs?neuron_id=${job.neuron_id}`, ws.key)).body as {
      jobs: { job_id: string }[];
    };
    expect(listed.jobs.map((j) => j.job_id)).toContain(sc.job_id);
  });

  it('sends progress notifications while the job runs when the call has a progress token', async () => {
    const client = await connect(keyHeaders());
    const progress: Progress[] = [];
    const r = await client.callTool({ name: 'slow-steps', arguments: { n: 21 } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(r.isError).toBeFalsy();
    expect(r.content).toEqual([{ type: 'text', text: '42' }]);
    expect((r.structuredContent as { result: { output: number } }).result.output).toBe(42);
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress.map((p) => p.message).join('\n')).toContain('node d1 (delay) started');
    for (let i = 1; i < progress.length; i++) expect(progress[i].progress).toBeGreaterThan(progress[i - 1].progress);
  });

  it('a cancelled call cancels its job', async () => {
    const client = await connect(keyHeaders());
    const ac = new AbortController();
    const call = client.callTool({ name: 'long-wait', arguments: { input: {} } }, undefined, { signal: ac.signal });
    call.catch(() => undefined);
    let jobId: string | undefined;
    for (let i = 0; i < 100 && !jobId; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const listed = (await app.get(`/v1/jobs?pathway_id=${longId}`, ws.key)).body as { jobs: { job_id: string }[] };
      jobId = listed.jobs[0]?.job_id;
    }
    expect(jobId).toBeDefined();
    ac.abort('changed my mind');
    await expect(call).rejects.toThrow();
    let job = await status(jobId!);
    for (let i = 0; i < 100 && job.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = await status(jobId!);
    }
    expect(job.status).toBe('failed');
    expect(job.failedReason).toMatch(/^cancelled/);
  });

  it('a job that stops at a human node answers isError with the approval link', async () => {
    await createPathway(
      'needs approval',
      [
        { id: 's', type: 'start' },
        { id: 'h', type: 'human', data: { title: 'Refund?', options: ['approve', 'reject'] } },
        { id: 'o', type: 'output', data: { value: '"ok"' } },
      ],
      chain(['s', 'h', 'o']),
    );
    const client = await connect(keyHeaders());
    const r = await client.callTool({ name: 'needs-approval', arguments: { input: { amount: 5 } } });
    expect(r.isError).toBe(true);
    const sc = r.structuredContent as { job_id: string; intervention_id: string; approval_url: string };
    expect(sc.approval_url).toMatch(new RegExp(`^${app.url}/approve/`));
    const text = (r.content as { text: string }[])[0].text;
    expect(text).toContain(sc.intervention_id);
    expect(text).toContain(sc.approval_url);
    expect((await status(sc.job_id)).status).toBe('waiting');
  });

  it('tells connected clients when the tool list changes', async () => {
    let changed = 0;
    const client = await connect(keyHeaders(), () => changed++);
    await client.listTools();
    // The client opens its standalone stream after initializing: give it a moment.
    await new Promise((r) => setTimeout(r, 300));
    const n = await app.post('/v1/neurons', ws.key, {
      name: `new-${randomUUID().slice(0, 6)}`,
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status).toBe(201);
    for (let i = 0; i < 100 && changed === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(changed).toBeGreaterThanOrEqual(1);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain(String(n.body.name));
  });
});
