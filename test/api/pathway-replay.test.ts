/**
 * Replay from a step (POST /v1/jobs/:id/replay) end to end: the real API and worker and a receiver
 * on 127.0.0.1 that counts every request (loopback allowed by host through OUTBOUND_ALLOW_HOSTS, as
 * in test/api/pathway-http.test.ts). The nodes before `from_node` are taken from the replayed run:
 * their `http` requests must not reach the receiver again.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';
import { dataOf, readSse } from '../support/sse.js';

const { app } = usePlatform({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'] });

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

/** Every request the receiver got: path and JSON body. `/missing/…` answers 404, anything else echoes 201. */
const received: { path: string; body: unknown }[] = [];
let base = '';
let server: Server;

function receive(req: IncomingMessage, res: ServerResponse) {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    const path = req.url ?? '';
    received.push({ path, body: body ? (JSON.parse(body) as unknown) : null });
    if (path.startsWith('/missing/')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('nothing here');
      return;
    }
    const n = received.filter((r) => r.path === path).length;
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ path, n }));
  });
}
const hits = (path: string) => received.filter((r) => r.path === path);

beforeAll(async () => {
  server = createServer(receive);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

/**
 * start → charge (http POST /<key>/charge: the side effect) → route (transform) → notify (http POST
 * /<where>/<key>/notify, `where` from the value flowing in) → output.
 */
async function createPathway(ws: Ws) {
  const nodes = [
    { id: 's', type: 'start' },
    {
      id: 'charge',
      type: 'http',
      data: { method: 'POST', url: `${base}/{{ input.key }}/charge`, body: { amount: '{{ input.amount }}' } },
    },
    { id: 'route', type: 'transform', data: { expression: '{ "where": input.where, "charged": last.body.n }' } },
    {
      id: 'notify',
      type: 'http',
      data: {
        method: 'POST',
        url: `${base}/{{ last.where }}/{{ input.key }}/notify`,
        body: { where: '{{ last.where }}' },
      },
    },
    { id: 'o', type: 'output' },
  ];
  const edges = [
    { source: 's', target: 'charge' },
    { source: 'charge', target: 'route' },
    { source: 'route', target: 'notify' },
    { source: 'notify', target: 'o' },
  ];
  const r = await app.post(
    '/v1/pathways',
    ws.key,
    { name: `replay-${randomUUID().slice(0, 8)}`, pathway_graph: { nodes, edges } },
    ws.brainHeaders,
  );
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String(r.body.id);
}

async function execute(ws: Ws, pathwayId: string, input: Record<string, unknown>) {
  const r = await app.post(`/v1/pathways/${pathwayId}/execute`, ws.key, { input }, ws.brainHeaders);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return String(r.body.job_id);
}

async function replay(ws: Ws, jobId: string, body: Record<string, unknown>) {
  return app.post(`/v1/jobs/${jobId}/replay`, ws.key, body);
}

type Result = { output: { status: number; body: unknown }; nodes: Record<string, unknown>; visited: string[] };

describe('POST /v1/jobs/:id/replay', () => {
  it('replays a completed run from a node: the nodes before it are not run again, the job records replay_of and from_node', async () => {
    const ws = await buildWorkspace(app);
    const pathwayId = await createPathway(ws);
    const key = randomUUID();
    const jobId = await execute(ws, pathwayId, { key, amount: 30, where: 'ok' });
    const first = await settleJob(app, ws.key, jobId);
    expect(first.status, first.failedReason).toBe('completed');
    expect(hits(`/${key}/charge`)).toHaveLength(1);
    expect(hits(`/ok/${key}/notify`)).toHaveLength(1);

    const r = await replay(ws, jobId, { from_node: 'notify' });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body).toMatchObject({ status: 'pending' });
    const replayId = String(r.body.job_id);
    expect(replayId).not.toBe(jobId);
    const again = await settleJob(app, ws.key, replayId);
    expect(again.status, again.failedReason).toBe('completed');

    // The charge was not sent again; notify ran again (its second request).
    expect(hits(`/${key}/charge`)).toHaveLength(1);
    expect(hits(`/ok/${key}/notify`)).toHaveLength(2);
    const before = first.result as Result;
    const after = again.result as Result;
    expect(after.nodes.charge).toEqual(before.nodes.charge);
    expect(after.nodes.route).toEqual(before.nodes.route);
    expect(after.output).toMatchObject({ status: 201, body: { path: `/ok/${key}/notify`, n: 2 } });
    expect(after.visited).toEqual(before.visited);

    // The job says what it replays, from where, on the same pathway version and input.
    const job = Job.parse((await app.get(`/v1/jobs/${replayId}`, ws.key)).body);
    expect(job).toMatchObject({
      replay_of: jobId,
      from_node: 'notify',
      pathway_id: pathwayId,
      pathway_version: first.pathway_version,
      input: { key, amount: 30, where: 'ok' },
    });
    expect(Job.parse((await app.get(`/v1/jobs/${jobId}`, ws.key)).body).replay_of).toBeUndefined();

    // The stream marks the taken nodes as replayed; the node it runs from is not.
    const sse = await readSse(`${app.url}/v1/jobs/${replayId}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
    });
    const finishes = sse.events.map(dataOf).filter((e) => e.type === 'node_finish');
    expect(finishes.map((e) => [e.node, e.replayed === true])).toEqual([
      ['s', true],
      ['charge', true],
      ['route', true],
      ['notify', false],
      ['o', false],
    ]);
  });

  it('replays a failed run from the failing node with input in place of its recorded input', async () => {
    const ws = await buildWorkspace(app);
    const pathwayId = await createPathway(ws);
    const key = randomUUID();
    const jobId = await execute(ws, pathwayId, { key, amount: 12, where: 'missing' });
    const failed = await settleJob(app, ws.key, jobId);
    expect(failed.status).toBe('failed');
    expect(hits(`/${key}/charge`)).toHaveLength(1);
    expect(hits(`/missing/${key}/notify`)).toHaveLength(1);

    const r = await replay(ws, jobId, { from_node: 'notify', input: { where: 'fixed' } });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const job = await settleJob(app, ws.key, String(r.body.job_id));
    expect(job.status, job.failedReason).toBe('completed');
    expect(hits(`/${key}/charge`)).toHaveLength(1);
    expect(hits(`/fixed/${key}/notify`)).toEqual([{ path: `/fixed/${key}/notify`, body: { where: 'fixed' } }]);
    expect(hits(`/missing/${key}/notify`)).toHaveLength(1);
    const result = job.result as Result;
    expect(result.nodes.route).toEqual({ where: 'missing', charged: 1 });
    expect(result.output).toMatchObject({ status: 201, body: { path: `/fixed/${key}/notify` } });

    // A replay is an ended run like any other: it replays in turn, from an earlier node.
    const r2 = await replay(ws, String(r.body.job_id), { from_node: 'route' });
    expect(r2.status, JSON.stringify(r2.body)).toBe(202);
    const third = await settleJob(app, ws.key, String(r2.body.job_id));
    expect(third.status).toBe('failed'); // route runs again from the run's input: where = missing
    expect(hits(`/${key}/charge`)).toHaveLength(1);
    expect(hits(`/missing/${key}/notify`)).toHaveLength(2);
  });

  it('a human node before from_node is not asked again: its recorded answer is taken and the replay runs on', async () => {
    const ws = await buildWorkspace(app);
    const key = randomUUID();
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: `human-${key.slice(0, 8)}`,
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 'h', type: 'human', data: { title: 'ship it?' } },
            {
              id: 'n',
              type: 'http',
              data: { method: 'POST', url: `${base}/${key}/after`, body: { action: '{{ last.action }}' } },
            },
          ],
          edges: [
            { source: 's', target: 'h' },
            { source: 'h', target: 'n' },
          ],
        },
      },
      ws.brainHeaders,
    );
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    const jobId = await execute(ws, String(p.body.id), {});
    let waiting: { interventionId?: string } | undefined;
    for (let i = 0; i < 300 && !waiting; i++) {
      const s = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
      if (s.status === 'waiting') waiting = s.waitingFor as { interventionId: string };
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(waiting?.interventionId).toBeTruthy();
    const answered = await app.post(`/v1/interventions/${String(waiting?.interventionId)}/respond`, ws.key, {
      action: 'approve',
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect((await settleJob(app, ws.key, jobId)).status).toBe('completed');

    const r = await replay(ws, jobId, { from_node: 'n' });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const again = await settleJob(app, ws.key, String(r.body.job_id), 30_000);
    expect(again.status, again.failedReason).toBe('completed');
    expect(hits(`/${key}/after`).map((h) => h.body)).toEqual([{ action: 'approve' }, { action: 'approve' }]);
    const list = await app.get<{ interventions: { job_id?: string }[] }>(
      '/v1/interventions?brain_scope=all&limit=100',
      ws.key,
    );
    expect(list.body.interventions.filter((i) => i.job_id === jobId)).toHaveLength(1);
    expect(list.body.interventions.filter((i) => i.job_id === String(r.body.job_id))).toEqual([]);
  });

  it('refuses an unknown node or one the run never reached (400 naming from_node), a run not ended (409), another workspace (404)', async () => {
    const ws = await buildWorkspace(app);
    const pathwayId = await createPathway(ws);
    const key = randomUUID();
    const jobId = await execute(ws, pathwayId, { key, amount: 1, where: 'missing' });
    expect((await settleJob(app, ws.key, jobId)).status).toBe('failed');

    const unknown = await replay(ws, jobId, { from_node: 'nope' });
    expect(unknown.status).toBe(400);
    expect(String(unknown.body.message)).toMatch(/^from_node/);
    const notReached = await replay(ws, jobId, { from_node: 'o' });
    expect(notReached.status).toBe(400);
    expect(String(notReached.body.message)).toMatch(/^from_node.*never reached/);
    const missing = await replay(ws, jobId, {});
    expect(missing.status).toBe(400);
    expect(String(missing.body.message)).toMatch(/from_node/);
    const badInput = await replay(ws, jobId, { from_node: 'notify', input: 'x' });
    expect(badInput.status).toBe(400);
    expect(String(badInput.body.message)).toMatch(/input/);

    const other = await buildWorkspace(app);
    expect((await replay(other, jobId, { from_node: 'notify' })).status).toBe(404);
    expect((await replay(ws, randomUUID(), { from_node: 'notify' })).status).toBe(404);
    expect(hits(`/${key}/charge`)).toHaveLength(1);

    // A run still going (it waits at a delay) is not replayed.
    const slow = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: `slow-${key.slice(0, 8)}`,
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 'd', type: 'delay', data: { seconds: 60 } },
          ],
          edges: [{ source: 's', target: 'd' }],
        },
      },
      ws.brainHeaders,
    );
    expect(slow.status).toBe(201);
    const running = await execute(ws, String(slow.body.id), {});
    const conflict = await replay(ws, running, { from_node: 'd' });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('CONFLICT');
    await app.post(`/v1/jobs/${running}/cancel`, ws.key, {});
  });
});
