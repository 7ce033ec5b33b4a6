/**
 * (n) Load (scripts/bench/measures/load.ts): writes beside streaming runs, against a fresh compiled API process
 * (the same worker), for BENCH_LOAD_SECONDS (180); then each write's sustainable rate in steps of
 * BENCH_LOAD_STEP_S (15) seconds.
 */
import { loadSummary, measureLoad } from '../measures/load.js';
import { pidRss } from '../probes.js';
import type { BenchSection } from '../section.js';
import { createNeuron, say, verdict } from '../support.js';

export const load: BenchSection = {
  letter: 'n',
  title: 'Load: writes beside streaming runs against a compiled API process',
  run: async ({ ws, llm, startApi }) => {
    // (n) Load: its own fresh API process, the same worker.
    const served = await startApi();
    const neuronId = await createNeuron(served.client, ws, 'bench-load');
    const n = await measureLoad({
      api: served.client,
      apiRss: () => pidRss(served.pid),
      ws,
      llm,
      neuronId,
      say,
      seconds: Number(process.env.BENCH_LOAD_SECONDS ?? 180),
      runs: 50,
      readersPerRun: 2,
      writesPerS: 20,
      stepS: Number(process.env.BENCH_LOAD_STEP_S ?? 15),
    });
    await served.stop();
    return loadSummary(n, verdict);
  },
};
