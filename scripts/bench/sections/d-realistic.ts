/** (d) A realistic provider (the simulator: slow, different on every call, failing mid-stream). */
import type { TestApp } from '../../../test/support/app.js';
import { createSimulation } from '../../../test/support/provider-sim.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import { shownReply } from '../../../test/support/sse.js';
import type { BenchSection } from '../section.js';
import { spread, type Spread } from '../stats.js';
import { createNeuron, fmt, runThroughApi, say, type Workspace } from '../support.js';

const REAL_RUNS = 20;
interface RealisticResult {
  completed: number;
  exact: number;
  retried: number;
  wallMs: number;
  addedTtft: Spread;
}

/**
 * (d) REAL_RUNS concurrent runs against the provider simulator (test/support/provider-sim.ts):
 * 300–800 ms think, 10–30 ms between tokens, different text on every call, and 10 % dropped
 * streams, 5 % 429 (Retry-After 1 s), 5 % 500. Reports how many completed, how many streams
 * showed exactly the stored reply (docs/streams.md rules), how many had a retried turn, and the
 * time to first token the platform adds over the simulated think.
 */
async function measureRealistic(app: TestApp, ws: Workspace, llm: ScriptedOpenAI): Promise<RealisticResult> {
  const sim = createSimulation({
    firstTokenMs: [300, 800],
    interTokenMs: [10, 30],
    tokens: 20,
    faultRate: { disconnect: 0.1, '429': 0.05, '500': 0.05 },
    retryAfterS: 1,
    seed: 7,
  });
  llm.setDefault(sim.reply);
  const neuronId = await createNeuron(app, ws, 'bench-realistic');
  say(`(d) realistic provider: ${REAL_RUNS} concurrent runs with faults`);
  const t0 = performance.now();
  const runs = await Promise.allSettled(
    Array.from({ length: REAL_RUNS }, (_, i) =>
      runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: `real ${i}` }),
    ),
  );
  const wallMs = performance.now() - t0;
  let exact = 0;
  let retried = 0;
  const added: number[] = [];
  for (const r of runs) {
    if (r.status !== 'fulfilled') continue;
    const entries = r.value.events.map((e) => e.data);
    const stored = String((entries.at(-1)?.result as { text?: string } | undefined)?.text ?? '');
    if (shownReply(entries) === stored) exact++;
    if (entries.some((e) => e.type === 'reset')) retried++;
    else {
      const msg = `real ${runs.indexOf(r)}`;
      const call = sim.said.find((x) => x.user === msg);
      const think = call ? sim.times[call.call - 1] : undefined;
      if (think !== undefined) added.push(think - r.value.startEpoch);
    }
  }
  return {
    completed: runs.filter((r) => r.status === 'fulfilled').length,
    exact,
    retried,
    wallMs,
    addedTtft: spread(added.length ? added : [NaN]),
  };
}

function summary(d: RealisticResult): string[] {
  return [
    `  (d) Realistic provider (simulator: 300–800 ms think, faults), ${REAL_RUNS} concurrent runs`,
    `      completed ${d.completed}/${REAL_RUNS}   stream shows exactly the stored reply ${d.exact}/${d.completed}   runs with a retried turn ${d.retried}`,
    `      wall time ${fmt(d.wallMs)} ms   platform time before the provider call (unretried runs) median ${fmt(d.addedTtft.median)} ms`,
  ];
}

export const realistic: BenchSection = {
  letter: 'd',
  title: 'A realistic provider: the simulator, slow, different on every call, failing mid-stream',
  run: async ({ app, ws, llm }) => summary(await measureRealistic(app, ws, llm)),
};
