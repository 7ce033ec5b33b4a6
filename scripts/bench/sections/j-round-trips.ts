/**
 * (j) Round trips per run: MongoDB commands the API and the worker send for one trivial run on a fresh
 * trace (cortex_mongo_commands_total, read from both processes' metrics), split into reads and
 * writes, and the Redis commands served meanwhile (INFO commandstats, every client).
 */
import type { TestApp } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import { storeCounters } from '../probes.js';
import type { BenchSection } from '../section.js';
import { createNeuron, fmt, runThroughApi, say, TPUT_REPLY, WARMUP, type Workspace } from '../support.js';

/** (j) Sequential trivial runs whose store commands are counted. */
const RT_RUNS = 20;

interface RoundTrips {
  runs: number;
  /** Per run: MongoDB commands sent by the API and by the worker, split into reads and writes. */
  api: { reads: number; writes: number; other: number };
  worker: { reads: number; writes: number; other: number };
  /** Per run: Redis commands (server side, every client: API, worker, the bench's SSE readers). */
  redis: number;
  /** Per run: Redis commands by name (a script's inner commands counted under their own names, its call under evalsha). */
  redisByCommand: Record<string, number>;
  /** Per run, every process: commands by name (find, insert, findAndModify, …). */
  byCommand: Record<string, number>;
  /** Per run, each process: commands by name and collection (`find jobs`). */
  apiByCollection: Record<string, number>;
  workerByCollection: Record<string, number>;
}

const READ_COMMANDS = new Set(['find', 'aggregate', 'count', 'getMore', 'distinct']);
const WRITE_COMMANDS = new Set(['insert', 'update', 'delete', 'findAndModify']);

/**
 * Reads and writes per run: RT_RUNS sequential trivial invokes on a fresh trace, each read to its
 * `complete` event; counters are read before and after (the API's registry in this process, the
 * worker's on its metrics port, Redis's commandstats) and divided by the run count. Nothing else
 * runs meanwhile, so the deltas are the runs' own (the INFO calls themselves are subtracted).
 */
async function measureRoundTrips(
  app: TestApp,
  ws: Workspace,
  llm: ScriptedOpenAI,
  workerMetricsUrl: string,
): Promise<RoundTrips> {
  llm.setDefault(() => TPUT_REPLY);
  const neuronId = await createNeuron(app, ws, 'bench-round-trips');
  const invoke = (i: number) => runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: `rt ${i}` });
  for (let i = 0; i < WARMUP; i++) await invoke(i);
  say(`(j) round trips: ${RT_RUNS} sequential trivial runs, counting store commands`);
  const snapshot = () => storeCounters(app, workerMetricsUrl);
  // The worker finishes a run after its `complete` entry (dropping the run log): let it settle.
  const settle = () => new Promise((r) => setTimeout(r, 300));
  await settle();
  const before = await snapshot();
  for (let i = 0; i < RT_RUNS; i++) await invoke(i);
  await settle();
  const after = await snapshot();
  const split = (a: Map<string, number>, b: Map<string, number>) => {
    const r = { reads: 0, writes: 0, other: 0 };
    for (const [cmd, n] of a) {
      const d = (n - (b.get(cmd) ?? 0)) / RT_RUNS;
      if (READ_COMMANDS.has(cmd)) r.reads += d;
      else if (WRITE_COMMANDS.has(cmd)) r.writes += d;
      else r.other += d;
    }
    return r;
  };
  const byCommand: Record<string, number> = {};
  for (const [which, a] of [
    ['api', after.api],
    ['worker', after.worker],
  ] as const) {
    for (const [cmd, n] of a) byCommand[cmd] = (byCommand[cmd] ?? 0) + (n - (before[which].get(cmd) ?? 0)) / RT_RUNS;
  }
  const perRun = (a: Map<string, number>, b: Map<string, number>) =>
    Object.fromEntries([...a].map(([k, n]) => [k, (n - (b.get(k) ?? 0)) / RT_RUNS]));
  const result: RoundTrips = {
    runs: RT_RUNS,
    api: split(after.api, before.api),
    worker: split(after.worker, before.worker),
    redis: (after.redis - before.redis - 1) / RT_RUNS,
    redisByCommand: Object.fromEntries(
      [...after.redisByCommand].map(([cmd, n]) => [
        cmd,
        (n - (before.redisByCommand.get(cmd) ?? 0) - (cmd === 'info' ? 1 : 0)) / RT_RUNS,
      ]),
    ),
    byCommand,
    apiByCollection: perRun(after.apiByCollection, before.apiByCollection),
    workerByCollection: perRun(after.workerByCollection, before.workerByCollection),
  };
  say(
    `(j) per run: API ${fmt(result.api.reads)} reads + ${fmt(result.api.writes)} writes, worker ${fmt(result.worker.reads)} reads + ${fmt(result.worker.writes)} writes, Redis ${fmt(result.redis)} commands`,
  );
  return result;
}

/** `name count, …`, the largest first, zeros left out. */
const byName = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .sort((x, y) => y[1] - x[1])
    .map(([c, n]) => `${c} ${n.toFixed(1)}`)
    .join(', ');

function summary(j: RoundTrips): string[] {
  const cmds = byName(j.byCommand);
  return [
    `  (j) Store round trips per run, ${j.runs} sequential trivial runs on fresh traces`,
    `      MongoDB, API                          ${fmt(j.api.reads)} reads + ${fmt(j.api.writes)} writes${j.api.other ? ` + ${fmt(j.api.other)} other` : ''}`,
    `      MongoDB, worker                       ${fmt(j.worker.reads)} reads + ${fmt(j.worker.writes)} writes${j.worker.other ? ` + ${fmt(j.worker.other)} other` : ''}`,
    `      by command (both)                     ${cmds}`,
    `      API by collection                     ${byName(j.apiByCollection)}`,
    `      worker by collection                  ${byName(j.workerByCollection)}`,
    `      Redis commands (every client)         ${fmt(j.redis)}`,
    `        by command                          ${byName(j.redisByCommand)}`,
  ];
}

export const roundTrips: BenchSection = {
  letter: 'j',
  title: 'Store round trips per run: MongoDB commands of the API and the worker, Redis commands',
  run: async ({ app, ws, llm, workerMetricsUrl }) => summary(await measureRoundTrips(app, ws, llm, workerMetricsUrl)),
};
