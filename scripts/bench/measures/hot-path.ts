/**
 * Where the time to a run's `202` goes, command by command (issue 50): for a few traced runs after
 * the timed ones (tracing costs a little, so the timed figures are taken without it), every store
 * command the API sent between the POST and its answer (from the driver's command monitoring: name,
 * collection, when it started and how long it took) and every Redis command the server ran meanwhile
 * (a `MONITOR` connection of its own: every client's commands, the API's and the worker's).
 */
import { Redis } from 'ioredis';
import type { CommandStartedEvent, CommandSucceededEvent, CommandFailedEvent } from 'mongodb';
import type { TestApp } from '../../../test/support/app.js';
import { median } from '../stats.js';
import type { RunTrace } from '../support.js';

/** One store command on the path: `insert jobs`, its start after the POST and its duration, ms. */
interface StoreCommand {
  name: string;
  at: number;
  ms: number;
}
export interface AcceptPath {
  runs: number;
  /** Median POST → 202 of the traced runs, ms. */
  acceptMs: number;
  /** Per name: median count per run, median duration and median start after the POST. */
  store: { name: string; perRun: number; ms: number; at: number }[];
  /** The store's busy span on the path: first command's start → last command's end, median, ms. */
  storeSpanMs: number;
  /** Redis commands on the path per run (every client), by name, medians. */
  redis: { name: string; perRun: number }[];
}

/** Runs `once` `runs` times with both tracers on and reports where each run's POST → 202 went. */
export async function traceAcceptPath(
  app: TestApp,
  redisUrl: string,
  runs: number,
  once: (i: number) => Promise<RunTrace>,
): Promise<AcceptPath> {
  const started = new Map<number, { name: string; at: number }>();
  /** Every command seen, `at` in performance.now() ms (made relative to its run below). */
  const done: StoreCommand[] = [];
  const onStart = (e: CommandStartedEvent) => {
    const coll = e.command[e.commandName] as unknown;
    started.set(e.requestId, {
      name: typeof coll === 'string' ? `${e.commandName} ${coll}` : e.commandName,
      at: performance.now(),
    });
  };
  const onEnd = (e: CommandSucceededEvent | CommandFailedEvent) => {
    const s = started.get(e.requestId);
    if (!s) return;
    started.delete(e.requestId);
    done.push({ name: s.name, at: s.at, ms: performance.now() - s.at });
  };
  const monitorLines: { epochMs: number; name: string }[] = [];
  const monitor = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await monitor.connect();
  const feed = await monitor.monitor();
  // `MONITOR` lines: `<epoch s.us> [db addr] "COMMAND" args…`.
  feed.on('monitor', (time: string, args: string[]) => {
    monitorLines.push({ epochMs: Number(time) * 1000, name: String(args[0] ?? '').toLowerCase() });
  });
  app.deps.mongo.on('commandStarted', onStart);
  app.deps.mongo.on('commandSucceeded', onEnd);
  app.deps.mongo.on('commandFailed', onEnd);
  const traces: RunTrace[] = [];
  try {
    for (let i = 0; i < runs; i++) traces.push(await once(i));
  } finally {
    app.deps.mongo.off('commandStarted', onStart);
    app.deps.mongo.off('commandSucceeded', onEnd);
    app.deps.mongo.off('commandFailed', onEnd);
    feed.disconnect();
    monitor.disconnect();
  }
  const perRun = traces.map((t) => {
    // The same command twice in a run is named by its turn (`aggregate jobs #2`), so each keeps its own place.
    const seen = new Map<string, number>();
    const cmds = done
      .filter((c) => c.at >= t.t0 && c.at < t.accepted)
      .sort((x, y) => x.at - y.at)
      .map((c) => {
        const n = (seen.get(c.name) ?? 0) + 1;
        seen.set(c.name, n);
        return { ...c, name: n > 1 ? `${c.name} #${n}` : c.name, at: c.at - t.t0 };
      });
    const endEpoch = t.startEpoch + (t.accepted - t.t0);
    const redis = monitorLines.filter((l) => l.epochMs >= t.startEpoch && l.epochMs < endEpoch);
    if (process.env.BENCH_HOT_PATH_TIMELINE) {
      const ev = [
        ...cmds.map((c) => ({ at: c.at, what: `store ${c.name} ${c.ms.toFixed(1)}` })),
        ...redis.map((l) => ({ at: l.epochMs - t.startEpoch, what: `redis ${l.name}` })),
      ].sort((a, b) => a.at - b.at);
      console.log(`--- run accept ${(t.accepted - t.t0).toFixed(1)}`);
      for (const e of ev) console.log(`  +${e.at.toFixed(1)} ${e.what}`);
    }
    const span = cmds.length ? Math.max(...cmds.map((c) => c.at + c.ms)) - Math.min(...cmds.map((c) => c.at)) : 0;
    return { cmds, redis, span, accept: t.accepted - t.t0 };
  });
  const names = [...new Set(perRun.flatMap((r) => r.cmds.map((c) => c.name)))];
  const store = names
    .map((name) => {
      const of = perRun.map((r) => r.cmds.filter((c) => c.name === name));
      const all = of.flat();
      return {
        name,
        perRun: median(of.map((x) => x.length)),
        ms: median(all.map((c) => c.ms)),
        at: median(all.map((c) => c.at)),
      };
    })
    .filter((s) => s.perRun > 0)
    .sort((x, y) => x.at - y.at);
  const redisNames = [...new Set(perRun.flatMap((r) => r.redis.map((l) => l.name)))];
  const redis = redisNames
    .map((name) => ({ name, perRun: median(perRun.map((r) => r.redis.filter((l) => l.name === name).length)) }))
    .filter((r) => r.perRun > 0)
    .sort((x, y) => y.perRun - x.perRun);
  return {
    runs,
    acceptMs: median(perRun.map((r) => r.accept)),
    store,
    storeSpanMs: median(perRun.map((r) => r.span)),
    redis,
  };
}

/** The report's lines for one route. */
export function acceptPathLines(label: string, p: AcceptPath): string[] {
  const f = (x: number) => x.toFixed(1);
  return [
    `      ${label}: POST → 202 of ${p.runs} traced runs, median ${f(p.acceptMs)} ms; the store busy ${f(p.storeSpanMs)} ms of it`,
    ...p.store.map(
      (s) =>
        `        ${s.name.padEnd(34)} ×${f(s.perRun)}  at +${f(s.at).padStart(5)} ms  took ${f(s.ms).padStart(5)} ms`,
    ),
    `        Redis commands on the path (every client): ${p.redis.map((r) => `${r.name} ${f(r.perRun)}`).join(', ') || 'none'}`,
  ];
}
