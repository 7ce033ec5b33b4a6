import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRedis, type Redis } from '../../src/kernel/redis.js';
import { startEmbedded, startRedisCluster, type EmbeddedServices } from '../../scripts/embedded.js';

/** The pid of the process listening on a loopback TCP port (from `ss`), so a test can stall or kill it. */
export function pidListeningOn(port: number): number {
  const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
  const m = /pid=(\d+)/.exec(out);
  if (!m) throw new Error(`no process listens on port ${port}: ${out}`);
  return Number(m[1]);
}

const portOf = (url: string): number => Number(new URL(url).port);

/**
 * A store and a Redis of this test file's own (real FerretDB and redis-server on free loopback
 * ports), so that stalling them (SIGSTOP) or stopping them does not disturb other test files that
 * share the suite's services. Temporal stays the suite's.
 */
export async function startOwnStoreAndRedis(): Promise<{
  mongoUri: string;
  redisUrl: string;
  mongoPid: number;
  redisPid: number;
  stop(): Promise<void>;
}> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-faults-'));
  const services: EmbeddedServices = await startEmbedded({
    dataDir,
    need: { mongo: true, redis: true, temporal: false },
    temporalUi: false,
    log: () => undefined,
  });
  const mongoUri = services.mongoUri!;
  const redisUrl = services.redisUrl!;
  return {
    mongoUri,
    redisUrl,
    mongoPid: pidListeningOn(portOf(mongoUri)),
    redisPid: pidListeningOn(portOf(redisUrl)),
    async stop() {
      await services.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Stops a process (SIGSTOP) until the returned function resumes it (SIGCONT). */
export function stall(pid: number): () => void {
  process.kill(pid, 'SIGSTOP');
  let resumed = false;
  return () => {
    if (!resumed) {
      resumed = true;
      process.kill(pid, 'SIGCONT');
    }
  };
}

/** A master of a private Redis Cluster (startOwnRedisCluster): its port, its node id and a plain connection to it. */
export interface ClusterMaster {
  port: number;
  id: string;
  conn: Redis;
}

const clusterState = async (m: ClusterMaster): Promise<string> =>
  /cluster_state:(\w+)/.exec(String(await m.conn.call('CLUSTER', 'INFO')))?.[1] ?? '?';

async function waitFor(what: string, fn: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`${what}: not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A Redis Cluster of this test file's own (3 masters on free loopback ports, scripts/embedded.ts),
 * so that taking its slots away or moving them does not disturb other test files on the suite's
 * cluster. Admin operations go to each master on a plain connection, as an operator's redis-cli would.
 */
export async function startOwnRedisCluster(): Promise<{
  nodes: string;
  masters: ClusterMaster[];
  /** The master that serves `slot`, as that master itself says (CLUSTER SLOTS). */
  ownerOf(slot: number): Promise<ClusterMaster>;
  /**
   * Makes every master refuse key commands with CLUSTERDOWN (each forgets one slot of its own:
   * CLUSTER DELSLOTS, and cluster-require-full-coverage is on) while still answering PING; resolves
   * once all say `cluster_state:fail`. The returned function gives the slots back and resolves once
   * all say `ok` again.
   */
  refuse(): Promise<() => Promise<void>>;
  /**
   * Moves `slot` to master `to` as redis-cli --cluster reshard does: IMPORTING on the target,
   * MIGRATING on the source, MIGRATE of its keys in batches, then SETSLOT NODE on every master.
   * `midway` runs after the keys have moved and before the slot is handed over (the ASK phase).
   */
  moveSlot(slot: number, to: ClusterMaster, midway?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-own-cluster-'));
  const cluster = await startRedisCluster({ dataDir, log: () => undefined });
  const masters: ClusterMaster[] = await Promise.all(
    cluster.nodes.split(',').map(async (spec) => {
      const port = Number(spec.slice(spec.lastIndexOf(':') + 1));
      const conn = createRedis({ topology: 'single', url: `redis://127.0.0.1:${port}` });
      return { port, conn, id: String(await conn.call('CLUSTER', 'MYID')) };
    }),
  );
  async function ownerOf(slot: number): Promise<ClusterMaster> {
    const ranges = (await masters[0].conn.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const port = ranges.find(([a, b]) => slot >= a && slot <= b)?.[2][1];
    const m = masters.find((x) => x.port === port);
    if (!m) throw new Error(`slot ${slot} is served by no master of this cluster`);
    return m;
  }
  return {
    nodes: cluster.nodes,
    masters,
    ownerOf,
    async refuse() {
      const ranges = (await masters[0].conn.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const taken = masters.map((m) => ({ m, slot: ranges.find(([, , [, port]]) => port === m.port)![0] }));
      for (const { m, slot } of taken) await m.conn.call('CLUSTER', 'DELSLOTS', slot);
      await waitFor('every master says cluster_state:fail', async () =>
        (await Promise.all(masters.map(clusterState))).every((s) => s === 'fail'),
      );
      return async () => {
        for (const { m, slot } of taken) await m.conn.call('CLUSTER', 'ADDSLOTS', slot);
        await waitFor('every master says cluster_state:ok', async () =>
          (await Promise.all(masters.map(clusterState))).every((s) => s === 'ok'),
        );
      };
    },
    async moveSlot(slot, to, midway) {
      const from = await ownerOf(slot);
      if (from === to) throw new Error(`slot ${slot} is already on ${to.port}`);
      await to.conn.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
      await from.conn.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
      for (;;) {
        const keys = (await from.conn.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
        if (!keys.length) break;
        await from.conn.call('MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...keys);
      }
      await midway?.();
      // The target first, then the source (the order redis-cli uses), then the third master.
      for (const m of [to, from, ...masters.filter((x) => x !== to && x !== from)])
        await m.conn.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
      await waitFor(`every master says slot ${slot} is on ${to.port}`, async () => {
        for (const m of masters) {
          const ranges = (await m.conn.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
          if (ranges.find(([a, b]) => slot >= a && slot <= b)?.[2][1] !== to.port) return false;
        }
        return true;
      });
    },
    async stop() {
      for (const m of masters) m.conn.disconnect();
      await cluster.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A request and how long it took to be answered. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ res: T; ms: number }> {
  const t0 = performance.now();
  const res = await fn();
  return { res, ms: performance.now() - t0 };
}

/** Polls `fn` every 100 ms until it answers true; throws after `ms`. */
export async function until(fn: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 100));
  }
}
