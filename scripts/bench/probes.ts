/**
 * What the bench reads off the machine, its processes and its stores: a process's RSS, the CPU of
 * the bench's process tree, the store commands sent so far, and the round trip of each service.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { TestApp } from '../../test/support/app.js';
import { registry } from '../../src/kernel/metrics.js';
import type { StoreCounters } from './measures/pathways.js';
import { median } from './stats.js';
import { fmt, say } from './support.js';

export const MB = 1024 * 1024;

/** A child's RSS from /proc/<pid>/status (VmRSS, kB); NaN where /proc is unavailable. */
export function pidRss(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) so far of this process and every descendant, keyed by a readable name. */
export function treeCpu(names: Map<number, string>): Map<string, number> {
  const procs: { pid: number; ppid: number; comm: string; s: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const rest = stat.slice(close + 2).split(' ');
      procs.push({
        pid: Number(entry),
        ppid: Number(rest[1]),
        comm: stat.slice(stat.indexOf('(') + 1, close),
        s: (Number(rest[11]) + Number(rest[12])) / 100,
      });
    } catch {
      /* the process ended meanwhile */
    }
  }
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const inTree = (p: { pid: number; ppid: number }): boolean => {
    for (let q: { pid: number; ppid: number } | undefined = p; q; q = byPid.get(q.ppid))
      if (q.pid === process.pid) return true;
    return false;
  };
  const out = new Map<string, number>();
  for (const p of procs) {
    if (!inTree(p)) continue;
    const name = names.get(p.pid) ?? p.comm;
    out.set(name, (out.get(name) ?? 0) + p.s);
  }
  return out;
}

/** cortex_mongo_commands_total by command, and by `command collection`, from Prometheus text. */
function mongoCounts(text: string): { byCommand: Map<string, number>; byCollection: Map<string, number> } {
  const byCommand = new Map<string, number>();
  const byCollection = new Map<string, number>();
  for (const m of text.matchAll(/^cortex_mongo_commands_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = new Map([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    const command = labels.get('command') ?? '';
    const n = Number(m[2]);
    byCommand.set(command, (byCommand.get(command) ?? 0) + n);
    const key = `${command} ${labels.get('collection') ?? ''}`.trim();
    byCollection.set(key, (byCollection.get(key) ?? 0) + n);
  }
  return { byCommand, byCollection };
}

/** Store commands sent so far: MongoDB by the API (this process) and the worker (its metrics port), Redis in all. */
export async function storeCounters(app: TestApp, workerMetricsUrl: string): Promise<StoreCounters> {
  const api = mongoCounts(await registry.metrics());
  const worker = mongoCounts(await (await fetch(workerMetricsUrl)).text());
  return {
    api: api.byCommand,
    worker: worker.byCommand,
    apiByCollection: api.byCollection,
    workerByCollection: worker.byCollection,
    ...(await redisCounts(app)),
  };
}

/** Redis commands served so far (INFO commandstats, every client included): in all, and by command. */
async function redisCounts(app: TestApp): Promise<{ redis: number; redisByCommand: Map<string, number> }> {
  const info = await app.deps.redis.info('commandstats');
  const redisByCommand = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) redisByCommand.set(m[1], Number(m[2]));
  return { redis: [...redisByCommand.values()].reduce((a, b) => a + b, 0), redisByCommand };
}

// ─── Service round trips ──────────────────────────────────────────────────────────────────────

/** Median round trip of one call to each backing service, the unit the platform's overhead is made of. */
export interface Probes {
  mongoRead: number;
  mongoWrite: number;
  redis: number;
  temporalRpc: number;
}

/**
 * Medians of 20 sequential calls each: a Mongo findOne by _id and an upsert (in the bench's own
 * database), a Redis PING, and a Temporal frontend RPC that touches no persistence (getSystemInfo).
 */
export async function probeServices(app: TestApp): Promise<Probes> {
  const time = async (fn: () => Promise<unknown>): Promise<number> => {
    await fn();
    const xs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await fn();
      xs.push(performance.now() - t0);
    }
    return median(xs);
  };
  const probe = app.deps.db.collection<{ _id: string; n: number }>('bench_probe');
  const result: Probes = {
    mongoRead: await time(() => probe.findOne({ _id: 'probe' })),
    mongoWrite: await time(() => probe.updateOne({ _id: 'probe' }, { $inc: { n: 1 } }, { upsert: true })),
    redis: await time(() => app.deps.redis.ping()),
    temporalRpc: await time(() => app.deps.temporal.connection.workflowService.getSystemInfo({})),
  };
  say(
    `service round trips (medians): Mongo read ${fmt(result.mongoRead)} ms, Mongo write ${fmt(result.mongoWrite)} ms, Redis ${fmt(result.redis)} ms, Temporal RPC ${fmt(result.temporalRpc)} ms`,
  );
  return result;
}
