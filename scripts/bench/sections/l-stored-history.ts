/**
 * (l) Stored history: a continuing conversation (RUNS_L runs on one trace, each run reading its history
 * and appending its reply) and GET /v1/traces/:id/messages, timed before and after BENCH_HISTORY
 * (20,000) engrams of other traces are written into the store; the ratio after ÷ before says
 * whether a run slows down as the platform's data grows (aim ≤ 1.2). Runs near the end: it fills the store.
 */
import { randomUUID } from 'node:crypto';
import type { TestApp } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import type { BenchSection } from '../section.js';
import { median, spread, type Spread } from '../stats.js';
import { createNeuron, fmt, runThroughApi, say, TPUT_REPLY, verdict, WARMUP, type Workspace } from '../support.js';

/** (l) Runs on one trace per phase, and the engrams of other traces stored between the phases. */
const RUNS_L = 12;
const HISTORY_ROWS = Number(process.env.BENCH_HISTORY ?? 20_000);
const AIM_HISTORY_RATIO = 1.2;

interface HistoryResult {
  rows: number;
  fillMs: number;
  before: { run: Spread; read: Spread };
  after: { run: Spread; read: Spread };
  runRatio: number;
  readRatio: number;
}

/**
 * A continuing conversation on an empty store and on one holding HISTORY_ROWS engrams of other
 * traces (another workspace): each phase runs RUNS_L invokes on one fresh trace, sequentially (each
 * run reads the trace's history and appends its reply), timing invoke → `complete`, and reads the
 * trace's messages after each run. The engrams are written straight into the store in batches.
 */
async function measureStoredHistory(app: TestApp, ws: Workspace, llm: ScriptedOpenAI): Promise<HistoryResult> {
  llm.setDefault(() => TPUT_REPLY);
  const neuronId = await createNeuron(app, ws, 'bench-history');
  const phase = async (label: string) => {
    const traceId = randomUUID();
    const runs: number[] = [];
    const reads: number[] = [];
    for (let i = 0; i < WARMUP + RUNS_L; i++) {
      const r = await runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, {
        message: `turn ${i}`,
        trace_id: traceId,
      });
      const t0 = performance.now();
      const m = await app.get(`/v1/traces/${traceId}/messages`, ws.key);
      if (m.status !== 200) throw new Error(`GET messages answered ${m.status}`);
      if (i >= WARMUP) {
        runs.push(r.done - r.t0);
        reads.push(performance.now() - t0);
      }
    }
    say(`(l) ${label}: run median ${fmt(median(runs))} ms, history read median ${fmt(median(reads))} ms`);
    return { run: spread(runs), read: spread(reads) };
  };
  say(`(l) stored history: ${RUNS_L} runs on one trace, before and after ${HISTORY_ROWS} engrams of other traces`);
  const before = await phase('empty store');
  const fillStarted = performance.now();
  const engrams = app.deps.db.collection('engrams');
  const otherWs = randomUUID();
  for (let from = 0; from < HISTORY_ROWS; from += 1000) {
    await engrams.insertMany(
      Array.from({ length: Math.min(1000, HISTORY_ROWS - from) }, (_, k) => {
        const n = from + k;
        return {
          _id: randomUUID() as never,
          workspaceId: otherWs,
          traceId: `history-${Math.floor(n / 20)}`,
          seq: (n % 20) + 1,
          content: { type: n % 2 ? 'neuron' : 'human', content: `stored turn ${n}: ${'lorem ipsum '.repeat(20)}` },
          contentHash: '',
          metadata: '{}',
          sourceType: 'user',
          sourceId: null,
          targetType: null,
          targetId: null,
          traceType: 'thread',
          memoryIds: [],
          jobId: null,
          createdAt: new Date(),
        };
      }),
    );
  }
  const fillMs = performance.now() - fillStarted;
  say(`(l) wrote ${HISTORY_ROWS} engrams in ${fmt(fillMs)} ms`);
  const after = await phase(`${HISTORY_ROWS} engrams stored`);
  return {
    rows: HISTORY_ROWS,
    fillMs,
    before,
    after,
    runRatio: after.run.median / before.run.median,
    readRatio: after.read.median / before.read.median,
  };
}

function summary(l: HistoryResult): string[] {
  return [
    `  (l) Stored history: ${RUNS_L} runs continuing one trace, before and after ${l.rows} engrams of other traces (written in ${fmt(l.fillMs / 1000)} s)`,
    `      run, before the fill                  median ${fmt(l.before.run.median).padStart(7)} ms   p90 ${fmt(l.before.run.p90).padStart(7)} ms`,
    `      run, ${String(l.rows).padEnd(6)} engrams stored         median ${fmt(l.after.run.median).padStart(7)} ms   p90 ${fmt(l.after.run.p90).padStart(7)} ms`,
    `      ratio after / before                  ${l.runRatio.toFixed(2)}   (aim ≤ ${AIM_HISTORY_RATIO}: ${verdict(l.runRatio <= AIM_HISTORY_RATIO)})`,
    `      history read (GET messages)           median ${fmt(l.before.read.median)} → ${fmt(l.after.read.median)} ms, ratio ${l.readRatio.toFixed(2)}`,
  ];
}

export const storedHistory: BenchSection = {
  letter: 'l',
  title: 'Stored history: a continuing conversation before and after 20,000 engrams of other traces',
  run: async ({ app, ws, llm }) => summary(await measureStoredHistory(app, ws, llm)),
};
