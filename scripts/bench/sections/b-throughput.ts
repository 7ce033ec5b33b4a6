/**
 * (b) Throughput: trivial neuron runs completed per second versus a bare one-activity workflow on the
 * same Temporal server (scripts/bench/bare-workflows.ts, its own worker and task queue).
 */
import type { TestApp } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import type { Bare } from '../bare.js';
import { treeCpu } from '../probes.js';
import type { BenchSection } from '../section.js';
import { pool } from '../stats.js';
import { createNeuron, fmt, runThroughApi, say, TPUT_REPLY, verdict, WARMUP, type Workspace } from '../support.js';

/** (b) Runs per throughput measure and how many are in flight at once. */
const TPUT_RUNS = 60;
const TPUT_CONCURRENCY = 8;
/** (b) The runs of each side are made in this many alternating rounds (platform, then bare). */
const TPUT_ROUNDS = 6;
/** Aim of issue 50 (the hot path under its guards), printed next to the figures. */
const AIM_TPUT_RATIO = 0.8;

interface ThroughputResult {
  platformPerS: number;
  barePerS: number;
  ratio: number;
  /** CPU time per completed run, ms, by process (this process and its descendants), for each side. */
  cpuPerRun: { platform: Record<string, number>; bare: Record<string, number> };
}

/** CPU ms per run by process between two treeCpu snapshots. */
function cpuDelta(before: Map<string, number>, after: Map<string, number>, runs: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, s] of after) {
    const d = ((s - (before.get(name) ?? 0)) * 1000) / runs;
    if (d >= 0.5) out[name] = d;
  }
  return out;
}

/**
 * Throughput: completed runs per second with TPUT_CONCURRENCY in flight, wall time from the first
 * start to the last completion.
 * - Platform: invoke a neuron whose scripted reply is one short chunk, then read the job stream to
 *   its `complete` event (the job is completed in the database before that event is written).
 * - Bare: `client.workflow.execute(bareOneActivity)` on the same Temporal server.
 */
async function measureThroughput(
  app: TestApp,
  ws: Workspace,
  llm: ScriptedOpenAI,
  bare: Bare,
  workerPid: number | undefined,
): Promise<ThroughputResult> {
  const names = new Map<number, string>([
    [process.pid, 'bench process (API, bare worker, provider, clients)'],
    ...(workerPid ? [[workerPid, 'worker'] as [number, string]] : []),
  ]);
  llm.setDefault(() => TPUT_REPLY);
  const neuronId = await createNeuron(app, ws, 'bench-throughput');
  const invoke = (i: number) =>
    runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: `tput ${i}` }).then(() => undefined);

  const bareOnce = () => bare.runOnce().then(() => undefined);
  say(
    `(b) throughput: warm-up ${WARMUP} of each, then ${TPUT_ROUNDS} rounds of ${TPUT_RUNS / TPUT_ROUNDS} platform runs and ${TPUT_RUNS / TPUT_ROUNDS} bare workflows, ${TPUT_CONCURRENCY} at a time`,
  );
  await pool(WARMUP, TPUT_CONCURRENCY, invoke);
  await pool(WARMUP, TPUT_CONCURRENCY, bareOnce);
  // Rounds alternate the sides, so a slow spell of this shared machine falls on both alike.
  let platformS = 0;
  let bareS = 0;
  const platformCpuS = new Map<string, number>();
  const bareCpuS = new Map<string, number>();
  const add = (into: Map<string, number>, before: Map<string, number>, after: Map<string, number>) => {
    for (const [k, v] of after) into.set(k, (into.get(k) ?? 0) + v - (before.get(k) ?? 0));
  };
  const perRound = TPUT_RUNS / TPUT_ROUNDS;
  for (let round = 0; round < TPUT_ROUNDS; round++) {
    let cpu0 = treeCpu(names);
    let t0 = performance.now();
    await pool(perRound, TPUT_CONCURRENCY, (i) => invoke(round * perRound + i));
    platformS += (performance.now() - t0) / 1000;
    add(platformCpuS, cpu0, treeCpu(names));
    cpu0 = treeCpu(names);
    t0 = performance.now();
    await pool(perRound, TPUT_CONCURRENCY, bareOnce);
    bareS += (performance.now() - t0) / 1000;
    add(bareCpuS, cpu0, treeCpu(names));
  }
  const platformCpu = cpuDelta(new Map(), platformCpuS, TPUT_RUNS);
  const bareCpu = cpuDelta(new Map(), bareCpuS, TPUT_RUNS);

  const result = {
    platformPerS: TPUT_RUNS / platformS,
    barePerS: TPUT_RUNS / bareS,
    ratio: bareS / platformS,
    cpuPerRun: { platform: platformCpu, bare: bareCpu },
  };
  say(
    `(b) platform ${result.platformPerS.toFixed(1)} runs/s (${fmt(platformS * 1000)} ms)  bare ${result.barePerS.toFixed(1)} runs/s (${fmt(bareS * 1000)} ms)  ratio ${result.ratio.toFixed(2)}`,
  );
  return result;
}

function summary(b: ThroughputResult): string[] {
  return [
    `  (b) Throughput, ${TPUT_RUNS} trivial runs a side in ${TPUT_ROUNDS} alternating rounds, ${TPUT_CONCURRENCY} in flight`,
    `      platform neuron runs                  ${b.platformPerS.toFixed(1).padStart(7)} runs/s`,
    `      bare one-activity workflows           ${b.barePerS.toFixed(1).padStart(7)} runs/s`,
    `      ratio platform / bare                 ${b.ratio.toFixed(2)}   (aim ≥ ${AIM_TPUT_RATIO}: ${verdict(b.ratio >= AIM_TPUT_RATIO)})`,
    ...(['platform', 'bare'] as const).map((side) => {
      const parts = Object.entries(b.cpuPerRun[side]).sort(([, x], [, y]) => y - x);
      const total = parts.reduce((a, [, v]) => a + v, 0);
      return `      CPU per ${side} run ${fmt(total).padStart(7)} ms: ${parts.map(([k, v]) => `${k} ${fmt(v)}`).join(' | ')}`;
    }),
  ];
}

export const throughput: BenchSection = {
  letter: 'b',
  title: 'Throughput: trivial platform runs per second versus a bare one-activity workflow',
  needsBare: true,
  run: async ({ app, ws, llm, bare, worker }) => summary(await measureThroughput(app, ws, llm, bare!, worker.pid)),
};
