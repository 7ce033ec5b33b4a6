/**
 * Tool calls that wait for a person (neuron_config.tool_approval): the call does not run until a
 * person answers its `tool_call` intervention; approve runs it once, edit runs it with the
 * person's arguments, reject and a timeout give the model the refusal as the call's result. The
 * tool is a real HTTP tool server on loopback that counts what it receives; the model is the
 * provider simulator (slow, varying answers).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { mcpHandler } from '../support/mcp-server.js';
import { useSimPlatform } from '../support/platform.js';

const { app, sim } = useSimPlatform(
  { firstTokenMs: [20, 80], interTokenMs: 5, tokens: [3, 6] },
  { OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'] },
);

/** The HTTP tool server: every request it got (path with query), answered with the city's forecast. */
let tools: Server;
let toolsUrl = '';
const calls: { path: string; key: string }[] = [];
/** Webhook receiver: the events it got. */
let hooks: Server;
let hooksUrl = '';
const events: { type: string; data: Record<string, unknown> }[] = [];

beforeAll(async () => {
  tools = createServer((req, res) => {
    calls.push({ path: req.url ?? '', key: String(req.headers['idempotency-key'] ?? '') });
    const city = decodeURIComponent((req.url ?? '').split('/weather/')[1]?.split('?')[0] ?? '');
    // The key the call came with is echoed back (a result that carries a credential).
    const keyUsed = new URL(req.url ?? '/', 'http://x').searchParams.get('api_key');
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ city, forecast: `sunny in ${city}`, ...(keyUsed ? { key_used: keyUsed } : {}) }));
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  hooks = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        type: string;
        data: Record<string, unknown>;
      };
      events.push(body);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  hooksUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}`;
  mcp = createServer(
    mcpHandler('orders', (server) => {
      server.registerTool(
        'lookup_order',
        { description: 'Looks up an order by id', inputSchema: { order_id: z.string() } },
        async ({ order_id }, extra) => {
          mcpCalls.push({ orderId: order_id, key: JSON.stringify(extra._meta ?? {}) });
          return { content: [{ type: 'text', text: `order ${order_id}: shipped` }] };
        },
      );
    }),
  );
  await new Promise<void>((r) => mcp.listen(0, '127.0.0.1', r));
  mcpUrl = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  tools.closeAllConnections();
  hooks.closeAllConnections();
  await new Promise((r) => tools.close(r));
  await new Promise((r) => hooks.close(r));
  mcp.closeAllConnections();
  await new Promise((r) => mcp.close(r));
});
/** An MCP server (the official SDK, Streamable HTTP) with one tool; what it executed. */
let mcp: Server;
let mcpUrl = '';
const mcpCalls: { orderId: string; key: string }[] = [];

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
interface InterventionView {
  id: string;
  kind: string;
  status: string;
  action: string | null;
  options: string[];
  payload: { tool: string; arguments: Record<string, unknown>; turn: number; call_id: string } | null;
  fields: Record<string, unknown> | null;
  deliveries: { channel: string; token?: string }[];
}

/** A neuron with a `weather` HTTP tool (city in the path, other arguments in the query) and the given approval config. */
async function approvingNeuron(ws: Ws, toolApproval: Record<string, unknown>) {
  const reflex = await app.post('/v1/reflexes', ws.key, {
    name: `weather-${Math.random().toString(36).slice(2, 8)}`,
    type: 'effector',
    scope: 'brain',
    brain_id: ws.brainId,
    metadata: {
      http_tools: [
        {
          name: 'weather',
          description: 'Forecast for a city',
          method: 'GET',
          url: `${toolsUrl}/weather/{city}`,
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' }, api_key: { type: 'string' } },
            required: ['city'],
          },
        },
      ],
    },
  });
  expect(reflex.status, reflex.text).toBe(201);
  const n = await app.post('/v1/neurons', ws.key, {
    name: `approver-${Math.random().toString(36).slice(2, 8)}`,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim', tool_approval: toolApproval },
  });
  expect(n.status, n.text).toBe(201);
  expect((n.body.neuron_config as Record<string, unknown>).tool_approval).toEqual(toolApproval);
  await app.post(`/v1/neurons/${String(n.body.id)}/reflexes`, ws.key, { reflex_id: reflex.body.id });
  return String(n.body.id);
}

/** The model calls weather for each city on its first turn, then answers in text. */
function modelCalls(...cities: string[]) {
  sim.configure({
    toolCalls: (body) =>
      body.messages.some((m) => m.role === 'tool')
        ? null
        : cities.map((city) => ({ name: 'weather', arguments: { city, api_key: 'sk-live-abcdefghijklmnopqrstu' } })),
  });
}

async function invoke(ws: Ws, neuronId: string, message: string): Promise<string> {
  const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message });
  expect(inv.status, inv.text).toBe(202);
  return String(inv.body.job_id);
}

/** Waits until the job reports `waiting` with `n` pending tool_call interventions, and returns those. */
async function waitingCalls(ws: Ws, jobId: string, n = 1): Promise<InterventionView[]> {
  const until = Date.now() + 30_000;
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    const list = await app.get<{ interventions: InterventionView[] }>(
      `/v1/interventions?job_id=${jobId}&status=pending&brain_scope=all`,
      ws.key,
    );
    const pending = list.body.interventions.filter((i) => i.kind === 'tool_call');
    if (job.status === 'waiting' && pending.length === n)
      return pending.sort((a, b) => a.payload!.call_id.localeCompare(b.payload!.call_id));
    if (job.status === 'completed' || job.status === 'failed' || Date.now() > until)
      throw new Error(`job ${job.status} with ${pending.length} pending tool calls`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const callsOf = (jobId: string) => calls.filter((c) => c.key.startsWith(`${jobId}:`));
/** The tool message the model read on the turn after the call (the last request's). */
const toolMessages = () =>
  sim.requests
    .at(-1)!
    .messages.filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
const streamOf = async (jobId: string) =>
  (await app.deps.streams.range(app.deps.streams.keys.job(jobId), undefined, 10_000)).map((e) => e.data);

describe('tool calls that wait for a person', () => {
  it('approve: the job waits with a tool_call intervention (redacted payload, stream entry, webhook, public link); the tool runs once after approval', async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const hook = await app.post('/v1/webhook-endpoints', admin, {
      url: `${hooksUrl}/ws-${ws.workspaceId}`,
      events: ['intervention.created', 'intervention.answered'],
    });
    expect(hook.status, hook.text).toBe(201);
    const neuronId = await approvingNeuron(ws, { tools: ['weather'] });
    modelCalls('Lisbon');
    const jobId = await invoke(ws, neuronId, 'Weather in Lisbon?');
    const [pending] = await waitingCalls(ws, jobId);

    // Nothing ran; the person sees the tool, the turn and the arguments with the key redacted.
    expect(callsOf(jobId)).toHaveLength(0);
    expect(pending.options).toEqual(['approve', 'edit', 'reject']);
    expect(pending.payload).toMatchObject({
      tool: 'weather',
      turn: 0,
      arguments: { city: 'Lisbon', api_key: '[redacted]' },
    });
    expect(JSON.stringify(pending)).not.toContain('sk-live');
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    expect(job.status).toBe('waiting');
    const waiting = (await streamOf(jobId)).filter((e) => e.type === 'waiting');
    expect(waiting).toEqual([
      expect.objectContaining({ intervention_id: pending.id, reason: 'tool_call', tool: 'weather', turn: 0 }),
    ]);
    // The public link shows the same call.
    const token = pending.deliveries.find((d) => d.channel === 'link')!.token!;
    const pub = await app.get<{ intervention: InterventionView }>(`/v1/public/interventions/${token}`, '');
    expect(pub.status).toBe(200);
    expect(pub.body.intervention.payload).toMatchObject({ tool: 'weather', arguments: { api_key: '[redacted]' } });
    // Another workspace cannot answer it.
    const other = await buildWorkspace(app);
    expect((await app.post(`/v1/interventions/${pending.id}/respond`, other.key, { action: 'approve' })).status).toBe(
      404,
    );

    const answered = await app.post<InterventionView>(`/v1/interventions/${pending.id}/respond`, ws.key, {
      action: 'approve',
    });
    expect(answered.status, answered.text).toBe(200);
    expect(answered.body.status).toBe('approved');
    const done = await settleJob(app, ws.key, jobId);
    expect(done.status).toBe('completed');
    // Run once, with the model's real arguments (the key reached the tool, never the person).
    expect(callsOf(jobId)).toEqual([
      { path: '/weather/Lisbon?api_key=sk-live-abcdefghijklmnopqrstu', key: expect.stringContaining(jobId) as string },
    ]);
    expect((done.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toContain('sunny in Lisbon');
    expect(toolMessages()[0]).toContain('sunny in Lisbon');
    // The job stream's tool entry shows the call with the key redacted, in its arguments and in its result.
    const toolEntries = (await streamOf(jobId)).filter((e) => e.type === 'tool');
    expect(toolEntries).toHaveLength(1);
    expect(toolEntries[0]).toMatchObject({ name: 'weather', arguments: { city: 'Lisbon', api_key: '[redacted]' } });
    expect(JSON.parse(String(toolEntries[0]!.result))).toEqual({
      city: 'Lisbon',
      forecast: 'sunny in Lisbon',
      key_used: '[redacted]',
    });
    expect(JSON.stringify(toolEntries)).not.toContain('sk-live');
    // A second answer is a conflict; nothing runs again.
    expect((await app.post(`/v1/interventions/${pending.id}/respond`, ws.key, { action: 'approve' })).status).toBe(409);
    expect(callsOf(jobId)).toHaveLength(1);
    // The webhook endpoint was told of the creation and the answer.
    const until = Date.now() + 20_000;
    const mine = () => events.filter((e) => e.data.intervention_id === pending.id).map((e) => e.type);
    while (!(mine().includes('intervention.created') && mine().includes('intervention.answered'))) {
      if (Date.now() > until) throw new Error(`webhooks: ${JSON.stringify(mine())}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it('edit through the public link: the tool runs with the edited arguments (a value left redacted keeps the model’s)', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await approvingNeuron(ws, { tools: 'all' });
    modelCalls('Lisbon');
    const jobId = await invoke(ws, neuronId, 'Weather?');
    const [pending] = await waitingCalls(ws, jobId);
    const token = pending.deliveries.find((d) => d.channel === 'link')!.token!;
    const noArgs = await app.post(`/v1/public/interventions/${token}/respond`, '', { action: 'edit' });
    expect(noArgs.status).toBe(400);
    expect(noArgs.body.message).toMatch(/arguments/);
    const wrong = await app.post(`/v1/public/interventions/${token}/respond`, '', { action: 'maybe' });
    expect(wrong.status).toBe(400);
    const edit = await app.post(`/v1/public/interventions/${token}/respond`, '', {
      action: 'edit',
      arguments: { city: 'Porto', api_key: '[redacted]' },
    });
    expect(edit.status, edit.text).toBe(200);
    expect(edit.body.intervention).toEqual({ id: pending.id, status: 'approved' });
    const done = await settleJob(app, ws.key, jobId);
    expect(done.status).toBe('completed');
    expect(callsOf(jobId).map((c) => c.path)).toEqual(['/weather/Porto?api_key=sk-live-abcdefghijklmnopqrstu']);
    expect(toolMessages()[0]).toContain('sunny in Porto');
    const rec = await app.get<InterventionView>(`/v1/interventions/${pending.id}`, ws.key);
    expect(rec.body).toMatchObject({ status: 'approved', action: 'edit', fields: { arguments: { city: 'Porto' } } });
  });

  it('reject with a comment: nothing runs, the model reads the refusal and the run goes on', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await approvingNeuron(ws, { tools: ['weather'] });
    modelCalls('Lisbon');
    const jobId = await invoke(ws, neuronId, 'Weather?');
    const [pending] = await waitingCalls(ws, jobId);
    const r = await app.post<InterventionView>(`/v1/interventions/${pending.id}/respond`, ws.key, {
      action: 'reject',
      comment: 'not that city',
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.status).toBe('rejected');
    const done = await settleJob(app, ws.key, jobId);
    expect(done.status).toBe('completed');
    expect(callsOf(jobId)).toHaveLength(0);
    const [msg] = toolMessages();
    expect(msg).toContain('rejected');
    expect(msg).toContain('not that city');
    expect((done.result as { turns: number }).turns).toBe(2);
  });

  it('no answer before timeout_s counts as reject: the intervention expires and a late answer is refused', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await approvingNeuron(ws, { tools: ['weather'], timeout_s: 2 });
    modelCalls('Lisbon');
    const jobId = await invoke(ws, neuronId, 'Weather?');
    const [pending] = await waitingCalls(ws, jobId);
    const done = await settleJob(app, ws.key, jobId);
    expect(done.status).toBe('completed');
    expect(callsOf(jobId)).toHaveLength(0);
    expect(toolMessages()[0]).toMatch(/within 2 s/);
    const rec = await app.get<InterventionView>(`/v1/interventions/${pending.id}`, ws.key);
    expect(rec.body.status).toBe('expired');
    expect((await app.post(`/v1/interventions/${pending.id}/respond`, ws.key, { action: 'approve' })).status).toBe(409);
    expect(callsOf(jobId)).toHaveLength(0);
  });

  it('two calls of one turn wait together and are answered one by one', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await approvingNeuron(ws, { tools: ['weather'] });
    modelCalls('Lisbon', 'Oslo');
    const jobId = await invoke(ws, neuronId, 'Weather in two cities?');
    const both = await waitingCalls(ws, jobId, 2);
    const byCity = new Map(both.map((i) => [String(i.payload!.arguments.city), i]));
    // The second call answered first: recorded, and the job still waits for the first.
    const oslo = await app.post(`/v1/interventions/${byCity.get('Oslo')!.id}/respond`, ws.key, { action: 'reject' });
    expect(oslo.status, oslo.text).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body).status).toBe('waiting');
    expect(callsOf(jobId)).toHaveLength(0);
    const lisbon = await app.post(`/v1/interventions/${byCity.get('Lisbon')!.id}/respond`, ws.key, {
      action: 'approve',
    });
    expect(lisbon.status, lisbon.text).toBe(200);
    const done = await settleJob(app, ws.key, jobId);
    expect(done.status).toBe('completed');
    expect(callsOf(jobId).map((c) => c.path.split('?')[0])).toEqual(['/weather/Lisbon']);
    const results = (done.result as { toolCalls: { result: string }[] }).toolCalls.map((t) => t.result);
    expect(results).toHaveLength(2);
    expect(results[0]).toContain('sunny in Lisbon');
    expect(results[1]).toContain('rejected');
  });
  it('an MCP tool and a built-in tool named in tool_approval wait; approved, each runs exactly once', async () => {
    const ws = await buildWorkspace(app);
    const reflex = await app.post('/v1/reflexes', ws.key, {
      name: `orders-${Math.random().toString(36).slice(2, 8)}`,
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: { server_url: mcpUrl },
    });
    expect(reflex.status, reflex.text).toBe(201);
    const n = await app.post('/v1/neurons', ws.key, {
      name: `mcp-approver-${Math.random().toString(36).slice(2, 8)}`,
      brain_id: ws.brainId,
      neuron_config: {
        model: 'openai/sim',
        tools: ['calculator'],
        tool_approval: { tools: ['lookup_order', 'calculator'] },
      },
    });
    expect(n.status, n.text).toBe(201);
    const neuronId = String(n.body.id);
    await app.post(`/v1/neurons/${neuronId}/reflexes`, ws.key, { reflex_id: reflex.body.id });
    sim.configure({
      toolCalls: (body) =>
        body.messages.some((m) => m.role === 'tool')
          ? null
          : [
              { name: 'lookup_order', arguments: { order_id: 'A-17' } },
              { name: 'calculator', arguments: { expression: '6 * 7' } },
            ],
    });
    const before = mcpCalls.length;
    const jobId = await invoke(ws, neuronId, 'Where is A-17, and what is 6 * 7?');
    const both = await waitingCalls(ws, jobId, 2);
    const byTool = new Map(both.map((i) => [i.payload!.tool, i]));
    expect([...byTool.keys()].sort()).toEqual(['calculator', 'lookup_order']);
    expect(byTool.get('lookup_order')!.payload!.arguments).toEqual({ order_id: 'A-17' });
    // Nothing ran while they wait.
    await new Promise((r) => setTimeout(r, 500));
    expect(mcpCalls.length).toBe(before);
    expect((await streamOf(jobId)).filter((e) => e.type === 'tool')).toHaveLength(0);
    for (const i of both) {
      const r = await app.post(`/v1/interventions/${i.id}/respond`, ws.key, { action: 'approve' });
      expect(r.status, r.text).toBe(200);
    }
    const done = await settleJob(app, ws.key, jobId);
    expect(done.status).toBe('completed');
    // The MCP server executed the call once, with the run's idempotency key.
    const mine = mcpCalls.slice(before);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ orderId: 'A-17' });
    expect(mine[0]!.key).toContain(jobId);
    const results = toolMessages();
    expect(results).toHaveLength(2);
    expect(results.some((t) => t.includes('order A-17: shipped'))).toBe(true);
    expect(results.some((t) => t.includes('42'))).toBe(true);
    // Each tool shows once on the job stream.
    const tools = (await streamOf(jobId)).filter((e) => e.type === 'tool').map((e) => e.name);
    expect(tools.sort()).toEqual(['calculator', 'lookup_order']);
    // A second approval runs nothing again.
    expect((await app.post(`/v1/interventions/${both[0]!.id}/respond`, ws.key, { action: 'approve' })).status).toBe(
      409,
    );
    expect(mcpCalls.length - before).toBe(1);
  });
});
