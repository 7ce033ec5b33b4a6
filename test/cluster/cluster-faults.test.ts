import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot } from '../../src/kernel/redis.js';
import type { StreamEntry } from '../../src/kernel/streams.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { startOwnRedisCluster, timed, until, type ClusterMaster } from '../support/faults.js';
import { dataOf, readSse } from '../support/sse.js';

/*
 * A Redis Cluster that refuses (CLUSTERDOWN) and a slot that moves to another master under a live
 * reader, on a 3-master cluster of this file's own (its slots are taken away and moved: the suite's
 * cluster must not see that). FerretDB and Temporal are the suite's. Project `cluster` only.
 */
type App = TestApp & { close(): Promise<void> };
type Own = Awaited<ReturnType<typeof startOwnRedisCluster>>;
let own: Own;
/** Probes the breaker every 250 ms, as production does every 500 ms. */
let app: App;
/** The same installation with a breaker that does not probe again within the test: only the errors themselves answer. */
let blind: App;

beforeAll(async () => {
  own = await startOwnRedisCluster();
  const on = { REDIS_CLUSTER_NODES: own.nodes, REQUEST_DEADLINE_MS: 5000 };
  app = await startTestApp({ ...on, BREAKER_PROBE_INTERVAL_MS: 250, BREAKER_PROBE_TIMEOUT_MS: 750 });
  blind = await startTestApp({
    ...on,
    MONGODB_DB: app.config.MONGODB_DB,
    REDIS_PREFIX: app.config.REDIS_PREFIX,
    TEMPORAL_TASK_QUEUE: app.config.TEMPORAL_TASK_QUEUE,
    DATA_DIR: app.config.DATA_DIR,
    BREAKER_PROBE_INTERVAL_MS: 60_000,
    BREAKER_PROBE_TIMEOUT_MS: 10_000,
  });
});
afterAll(async () => {
  await Promise.all([app?.close(), blind?.close()]);
  await own?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The bound faults.test.ts sets for a stalled single Redis, with room for a loaded 2-core machine.
const BOUND_MS = 2_500;

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
type Refused = { status: number; body: Record<string, unknown>; headers: Headers };

function expectRefused(r: { res: Refused; ms: number }) {
  expect(r.res.status).toBe(503);
  expect(r.res.body).toEqual({ message: expect.any(String), code: 'SERVICE_UNAVAILABLE' });
  expect(r.res.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(r.ms).toBeLessThan(BOUND_MS);
}

/** The jobs of a neuron, as the API lists them. */
async function jobsOf(a: App, ws: Ws, neuronId: string): Promise<string[]> {
  const res = await a.get<{ jobs: { job_id: string; neuron_id: string | null }[] }>('/v1/jobs?limit=100', ws.key);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.jobs.filter((j) => j.neuron_id === neuronId).map((j) => j.job_id);
}

describe('a cluster that refuses (CLUSTERDOWN)', () => {
  it('requests that need Redis answer 503 { message, code } with Retry-After within the bound, before and after the breaker notices; nothing answered 503 is stored; all recovers when the cluster is whole', async () => {
    const ws = await buildWorkspace(app);
    const neuron = await app.post('/v1/neurons', ws.key, {
      name: `refused ${randomUUID().slice(0, 8)}`,
      brain_id: ws.brainId,
      neuron_config: { model: 'local/echo' },
    });
    expect(neuron.status, neuron.text).toBe(201);
    const neuronId = String(neuron.body.id);
    const scope = await app.services.auth.authenticate(ws.key);
    const jobId = randomUUID();
    await app.services.jobs.create(scope, { id: jobId, kind: 'neuron' });
    const invoke = (a: App, key: string) =>
      a.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'hello' }, { 'idempotency-key': key });
    const keys = [`k-${randomUUID()}`, `k-${randomUUID()}`];

    const restore = await own.refuse();
    try {
      // Every master still answers PING: only the refusals themselves say the cluster is down here.
      expect(blind.deps.breakers.isOpen('redis')).toBe(false);
      expectRefused(await timed(() => invoke(blind, keys[0])));
      expectRefused(await timed(() => blind.get(`/v1/jobs/${jobId}/stream`, ws.key)));
      expect(blind.deps.breakers.isOpen('redis')).toBe(false);

      // The probing API's breaker opens on cluster_state:fail (its masters answer PING all along),
      // and /health says so; requests are then refused by the breaker before they touch Redis.
      await until(async () => app.deps.breakers.isOpen('redis'), BOUND_MS);
      expect(app.deps.breakers.state('redis').reason).toMatch(/CLUSTERDOWN: .* reports cluster_state:fail/);
      const health = await timed(() => app.get('/health'));
      expect(health.res.status).toBe(503);
      expect(health.res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(health.ms).toBeLessThan(BOUND_MS);
      const shed = await timed(() => invoke(app, keys[1]));
      expectRefused(shed);
      expect(shed.res.body.message).toMatch(/Redis is unavailable/);
      expectRefused(await timed(() => app.get(`/v1/jobs/${jobId}/stream`, ws.key)));
      // Held for a while, as an outage would be: requests keep being refused, none waits it out.
      await sleep(1500);
      expectRefused(await timed(() => invoke(app, `k-${randomUUID()}`)));
    } finally {
      await restore();
      // The breaker closes on its next probe: the tests after this one meet a whole cluster.
      await until(async () => !app.deps.breakers.isOpen('redis'));
    }

    await until(async () => (await app.get('/health')).status === 200);
    // Refused invokes were not stored and start nothing, even after the cluster came back.
    await sleep(500);
    expect(await jobsOf(app, ws, neuronId)).toEqual([]);
    // A retry with the same key is the first and only run of that key.
    const retried = await invoke(blind, keys[0]);
    expect(retried.status, retried.text).toBe(202);
    const again = await invoke(app, keys[0]);
    expect(again.status, again.text).toBe(202);
    expect(again.body.job_id).toBe(retried.body.job_id);
    expect(await jobsOf(app, ws, neuronId)).toEqual([retried.body.job_id]);
  });
});

/** Every entry of a stream read over SSE: their ids strictly increase (each entry once, in order). */
function expectInOrder(ids: string[]) {
  const parsed = ids.map((id) => id.split('-').map(BigInt));
  for (let i = 1; i < parsed.length; i++) {
    const [a, b] = [parsed[i - 1], parsed[i]];
    expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]), `${ids[i - 1]} before ${ids[i]}`).toBe(true);
  }
}

/** Another master than the one serving `slot`. */
async function otherThanOwner(slot: number): Promise<{ from: ClusterMaster; to: ClusterMaster }> {
  const from = await own.ownerOf(slot);
  return { from, to: own.masters.find((m) => m !== from)! };
}

describe('a slot that moves to another master under a live reader', () => {
  it('an SSE client of a job stream sees every entry once, in order, ending on the one terminal entry, on one connection', async () => {
    const ws = await buildWorkspace(app);
    const scope = await app.services.auth.authenticate(ws.key);
    const jobId = randomUUID();
    await app.services.jobs.create(scope, { id: jobId, kind: 'neuron' });
    const key = app.services.jobs.streamKey(jobId);
    const slot = keySlot(key);
    const { from, to } = await otherThanOwner(slot);
    const { streams } = app.deps;
    const total = 120;
    let written = 0;
    const writer = (async () => {
      for (let n = 0; n < total; n++) {
        expect(await streams.append(key, { type: 'progress', n })).not.toBeNull();
        written++;
        await sleep(15);
      }
      expect(await streams.append(key, { type: 'complete' }, { kind: 'terminal' })).not.toBeNull();
    })();
    const moved = (async () => {
      await until(async () => written >= 30, 10_000);
      // Writes go on while the keys have moved and the slot is not handed over yet (ASK), then after (MOVED).
      await own.moveSlot(slot, to, () => until(async () => written >= 60, 10_000));
    })();
    const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      timeoutMs: 30_000,
    });
    await Promise.all([writer, moved]);

    expect(sse.status).toBe(200);
    expect(sse.ended).toBe(true); // the server closed it after the terminal entry
    const data = sse.events.map(dataOf);
    expect(data.map((d) => (d.type === 'progress' ? d.n : d.type))).toEqual([
      ...Array.from({ length: total }, (_, n) => n),
      'complete',
    ]);
    expectInOrder(sse.events.map((e) => e.id!));
    // The stream and its fences now live on the other master.
    expect((await own.ownerOf(slot)).port).toBe(to.port);
    expect(await to.conn.exists(key, streams.keys.meta(key))).toBe(2);
    expect(from.port).not.toBe(to.port);
  });

  it('a follower of the resource feed reads a partition whose slot moves without an error, every entry once and in order', async () => {
    const { feed } = app.deps.streams;
    const workspaceId = randomUUID();
    const p = feed.partitionOf(workspaceId);
    const slot = keySlot(feed.keys.partition(p));
    const { to } = await otherThanOwner(slot);
    const last = (await feed.positions()).map((x) => x.id);
    const reader = feed.reader();
    const seen: number[] = [];
    const total = 120;
    let written = 0;
    const writer = (async () => {
      for (let i = 0; i < total; i++) {
        await feed.append(workspaceId, { workspace_id: workspaceId, i });
        written++;
        await sleep(15);
      }
    })();
    const moved = (async () => {
      await until(async () => written >= 30, 10_000);
      await own.moveSlot(slot, to, () => until(async () => written >= 60, 10_000));
    })();
    try {
      const deadline = Date.now() + 30_000;
      while (seen.length < total && Date.now() < deadline) {
        // A read that failed (a slot that moved and was not followed) fails the test here.
        for (const { partition, entries } of await reader.read(last, 500, 100)) {
          for (const e of entries as StreamEntry[])
            if (e.data.workspace_id === workspaceId) seen.push(Number(e.data.i));
          last[partition] = entries[entries.length - 1].id;
        }
      }
    } finally {
      reader.close();
    }
    await Promise.all([writer, moved]);
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
    expect((await own.ownerOf(slot)).port).toBe(to.port);
  });
});
