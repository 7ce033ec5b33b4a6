import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { keySlot } from '../../src/kernel/redis.js';
import { systemScope } from '../../src/kernel/scope.js';
import type { BilledCall } from '../../src/usage/index.js';
import type { StreamEntry } from '../../src/kernel/streams.js';
import { buildWorkspace, startTestApp, useTestApp } from '../support/app.js';

/**
 * What Redis does for the platform, on the topology the project runs (vitest.config.ts: the
 * `integration` project on one redis-server, `cluster` on a local 3-master Redis Cluster, where a
 * script, transaction or multi-key command whose keys span slots fails with CROSSSLOT): the fenced
 * stream writer, the partitioned resource feed and a reader of all of it, usage counters, and the
 * limits kept in Redis.
 */
const onCluster = process.env.CORTEX_TEST_REDIS === 'cluster';
const app = useTestApp({ AUTH_FAILURES_PER_MINUTE: 3, RESOURCE_FEED_PARTITIONS: 8 });

describe('the stream writer', () => {
  it('runs on the topology the project names; a terminal entry wins once among 30 concurrent writers, and nothing follows it', async () => {
    expect(app.deps.redis.isCluster).toBe(onCluster);
    const { streams } = app.deps;
    const key = streams.keys.job(randomUUID());
    expect(await streams.append(key, { type: 'status', status: 'running' })).toMatch(/^\d+-\d+$/);
    const ids = await Promise.all(
      Array.from({ length: 30 }, (_, i) => streams.append(key, { type: 'complete', n: i }, { kind: 'terminal' })),
    );
    expect(ids.filter((id) => id !== null)).toHaveLength(1);
    expect(await streams.append(key, { type: 'status', status: 'late' })).toBeNull();
    const entries = await streams.range(key);
    expect(entries.map((e) => e.data.type)).toEqual(['status', 'complete']);
  });

  it("a turn's reset refuses the older attempt's tokens; a dropped stream starts afresh", async () => {
    const { streams } = app.deps;
    const key = streams.keys.job(randomUUID());
    const turn = (attempt: number) => ({ kind: 'turn' as const, turn: 0, attempt });
    expect(await streams.append(key, { type: 'token', text: 'a', attempt: 1 }, turn(1))).not.toBeNull();
    expect(
      await streams.append(key, { type: 'reset', turn: 0, attempt: 2 }, { kind: 'reset', turn: 0, attempt: 2 }),
    ).not.toBeNull();
    expect(await streams.append(key, { type: 'token', text: 'late', attempt: 1 }, turn(1))).toBeNull();
    expect(await streams.append(key, { type: 'token', text: 'b', attempt: 2 }, turn(2))).not.toBeNull();
    expect(await streams.append(key, { type: 'complete' }, { kind: 'terminal' })).not.toBeNull();
    await streams.drop(key);
    expect(await streams.range(key)).toEqual([]);
    expect(await streams.append(key, { type: 'complete' }, { kind: 'terminal' })).not.toBeNull();
  });

  it("claimed turn attempts are numbered once each per turn, beside the stream's fences, and go with the stream", async () => {
    const { streams } = app.deps;
    const key = streams.keys.job(randomUUID());
    const claimed = await Promise.all(Array.from({ length: 12 }, () => streams.claimAttempt(key, 0)));
    expect([...claimed].sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(await streams.claimAttempt(key, 1)).toBe(1);
    // The newest claim's reset fences off every older attempt's tokens.
    expect(await streams.append(key, { type: 'reset' }, { kind: 'reset', turn: 0, attempt: 13 })).not.toBeNull();
    expect(await streams.append(key, { type: 'token' }, { kind: 'turn', turn: 0, attempt: 12 })).toBeNull();
    await streams.drop(key);
    expect(await streams.claimAttempt(key, 0)).toBe(1);
    await streams.drop(key);
  });

  it.skipIf(onCluster)(
    'fences kept under the former meta name (before it moved into the stream slot) still hold, and are taken over',
    async () => {
      const { streams, redis } = app.deps;
      const ended = streams.keys.job(randomUUID());
      await redis.xadd(ended, '*', 'data', JSON.stringify({ type: 'complete' }));
      await redis.hset(`${ended}:meta`, 'terminal', '1');
      expect(await streams.append(ended, { type: 'error', error: 'cancelled' }, { kind: 'terminal' })).toBeNull();
      expect(await redis.exists(`${ended}:meta`)).toBe(0);
      expect(await redis.hget(streams.keys.meta(ended), 'terminal')).toBe('1');

      const retried = streams.keys.job(randomUUID());
      await redis.hset(`${retried}:meta`, 't0', '2');
      expect(
        await streams.append(retried, { type: 'token', attempt: 1 }, { kind: 'turn', turn: 0, attempt: 1 }),
      ).toBeNull();
      expect(
        await streams.append(retried, { type: 'token', attempt: 2 }, { kind: 'turn', turn: 0, attempt: 2 }),
      ).not.toBeNull();
    },
  );
});

describe('the resource feed', () => {
  it('is partitioned by workspace; a reader of every partition gets each workspace’s events in order', async () => {
    const { feed } = app.deps.streams;
    expect(feed.partitions).toBe(8);
    const before = (await feed.positions()).map((p) => p.id);
    const workspaces: string[] = Array.from({ length: 24 }, () => randomUUID());
    const per = 15;
    // Each workspace writes its events one after another; the workspaces write at once.
    await Promise.all(
      workspaces.map(async (ws) => {
        for (let i = 0; i < per; i++) await feed.append(ws, { workspace_id: ws, i });
      }),
    );
    const used = new Set(workspaces.map((ws) => feed.partitionOf(ws)));
    expect(used.size).toBeGreaterThan(1);
    if (onCluster) {
      // The partitions live on more than one master; the slot a reader is placed by is Redis's.
      const cluster = app.deps.redis as Cluster;
      for (const k of [feed.keys.partition(0), feed.keys.meta(0), feed.keys.mark(0, workspaces[0])])
        expect(keySlot(k)).toBe(Number(await cluster.call('CLUSTER', 'KEYSLOT', k)));
      const slots = await Promise.all(
        [...used].map(async (p) => Number(await cluster.call('CLUSTER', 'KEYSLOT', feed.keys.partition(p)))),
      );
      expect(new Set(slots.map((s) => cluster.slots[s]?.[0])).size).toBeGreaterThan(1);
    }
    const seen = new Map<string, number[]>();
    const last = [...before];
    const reader = feed.reader();
    try {
      const deadline = Date.now() + 10_000;
      let total = 0;
      while (total < workspaces.length * per && Date.now() < deadline) {
        for (const { partition, entries } of await reader.read(last, 500, 100)) {
          const seqs = entries.map((e: StreamEntry) => e.seq!);
          expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i)); // consecutive within the partition
          for (const e of entries) {
            const ws = String(e.data.workspace_id);
            if (!workspaces.includes(ws)) continue;
            expect(feed.partitionOf(ws)).toBe(partition);
            seen.set(ws, [...(seen.get(ws) ?? []), Number(e.data.i)]);
            total++;
          }
          last[partition] = entries[entries.length - 1].id;
        }
      }
    } finally {
      reader.close();
    }
    for (const ws of workspaces) expect(seen.get(ws)).toEqual(Array.from({ length: per }, (_, i) => i));
    // Each partition's counter is its newest entry's seq; the mark is the workspace's newest entry.
    const after = await feed.positions();
    for (const p of used) expect(after[p].id).toBe(last[p]);
    const mark = await feed.mark(workspaces[0]);
    expect(mark).toEqual({ partition: feed.partitionOf(workspaces[0]), id: expect.any(String) });
  });

  it('a write through one API is found by a search on the same feed at once', async () => {
    const ws = await buildWorkspace(app);
    const name = `topology ${randomUUID().slice(0, 8)}`;
    const created = await app.post('/v1/neurons', ws.key, { name, brain_id: ws.brainId });
    expect(created.status, created.text).toBe(201);
    const res = await app.post(
      '/v1/search',
      ws.key,
      { query: `neurons/${name}`, search_mode: 'lexical' },
      ws.brainHeaders,
    );
    expect(res.status, res.text).toBe(200);
    expect((res.body as { results: { id: string }[] }).results[0]?.id).toBe(created.body.id);
  });
});

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Runs the API entry point with `env` over this process's; resolves with its exit code and stderr (it must exit by itself). */
function runApi(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
      cwd: root,
      env: { ...process.env, LOG_LEVEL: 'silent', PORT: '0', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe("the feed's partition count", () => {
  it('is recorded by the first process; one with another RESOURCE_FEED_PARTITIONS refuses to start, saying both counts and what to do', async () => {
    const { feed } = app.deps.streams;
    expect(await app.deps.redis.get(feed.keys.count)).toBe('8');
    const same = { MONGODB_DB: app.config.MONGODB_DB, REDIS_PREFIX: app.config.REDIS_PREFIX };
    await expect(startTestApp({ ...same, RESOURCE_FEED_PARTITIONS: 16 })).rejects.toThrow(
      /RESOURCE_FEED_PARTITIONS is 16 here, but the processes on this Redis use 8 .*RESOURCE_FEED_PARTITIONS=8.*redis-cli DEL/,
    );
    // What an operator sees: the API exits at start with one line.
    const refused = await runApi({
      MONGODB_DB: app.config.MONGODB_DB,
      REDIS_PREFIX: app.config.REDIS_PREFIX,
      RESOURCE_FEED_PARTITIONS: '4',
      TEMPORAL_TASK_QUEUE: app.config.TEMPORAL_TASK_QUEUE,
      ...(app.config.REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES: app.config.REDIS_CLUSTER_NODES } : {}),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/^cortex api: refusing to start: RESOURCE_FEED_PARTITIONS is 4 here, but .* use 8/);
    // The same count starts; the recorded count is unchanged.
    const other = await startTestApp({ ...same, RESOURCE_FEED_PARTITIONS: 8 });
    await other.close();
    expect(await app.deps.redis.get(feed.keys.count)).toBe('8');
    // Changing the count: with every process stopped, the key is deleted and the next start records its own.
    const fresh = { MONGODB_DB: app.config.MONGODB_DB, REDIS_PREFIX: `t${randomUUID().slice(0, 8)}:` };
    const first = await startTestApp({ ...fresh, RESOURCE_FEED_PARTITIONS: 2 });
    await first.close();
    await app.deps.redis.del(`${fresh.REDIS_PREFIX}resource-feed:partitions`);
    const changed = await startTestApp({ ...fresh, RESOURCE_FEED_PARTITIONS: 4 });
    try {
      expect(await changed.deps.redis.get(changed.deps.streams.feed.keys.count)).toBe('4');
    } finally {
      await changed.close();
      await app.deps.redis.del(changed.deps.streams.feed.keys.count);
    }
  }, 90_000);
});

describe('counters and limits kept in Redis', () => {
  it('usage counters: a call counts once per budget target, whatever retries (one script over the workspace slot)', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = randomUUID();
    const calls: BilledCall[] = Array.from({ length: 6 }, (_, i) => ({
      key: `${randomUUID()}:chat:0:1`,
      workspaceId: ws.workspaceId,
      kind: 'chat',
      modelId: 'openai/gpt-4o-mini',
      usage: { inputTokens: 100 + i, outputTokens: 10, totalTokens: 0, cachedInputTokens: 0 },
      placed: false,
      attribution: {
        brainId: ws.brainId,
        userId: null,
        apiKeyId: ws.apiKeyId,
        jobId: randomUUID(),
        runId: null,
        traceId: null,
        receptorId: randomUUID(),
        neuronId,
        pathwayId: null,
        shareTokenId: randomUUID(),
      },
    }));
    await Promise.all([...calls, ...calls].map((c) => app.services.usage.record(c)));
    const scope = systemScope(ws.workspaceId);
    const counted = await app.services.usage.stats(scope, {}, false);
    expect(counted.calls).toBe(6);
    expect(counted).toEqual(await app.services.usage.statsFromLedger(scope, {}, false));
  });

  it('an Idempotency-Key replays the first answer; failed authentications are limited per address', async () => {
    const ws = await buildWorkspace(app);
    const key = randomUUID();
    const body = { name: `idem ${key.slice(0, 8)}`, brain_id: ws.brainId };
    const first = await app.post('/v1/neurons', ws.key, body, { 'idempotency-key': key });
    const again = await app.post('/v1/neurons', ws.key, body, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);

    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await app.get('/v1/neurons', `ck_wrong_${randomUUID()}`, ws.brainHeaders)).status);
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses.slice(3)).toEqual([429, 429]);
    // A valid credential from the same address is never refused by it.
    expect((await app.get('/v1/neurons', ws.key, ws.brainHeaders)).status).toBe(200);
  });
});
