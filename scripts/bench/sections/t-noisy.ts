/**
 * (t) Noisy neighbour (scripts/bench/measures/noisy.ts): workspace B starts BENCH_NOISY_RUNS (500) streaming runs at once
 * against the provider simulator from a client process of its own (scripts/bench/measures/noisy-flood.ts), retrying
 * starts refused past its share of runs after Retry-After;
 * meanwhile workspace A's invoke time to first token, a pathway run's time to completion and a search
 * answer, idle vs under the flood (median and max), each with whether it stays within 2× of idle.
 * Against a compiled API with the default per-workspace shares (BENCH_NOISY_SHARE sets the runs share).
 */
import { ConfigSchema } from '../../../src/kernel/config.js';
import { buildWorkspace } from '../../../test/support/app.js';
import { measureNoisyNeighbour, noisySummary } from '../measures/noisy.js';
import { treeCpu } from '../probes.js';
import type { BenchSection } from '../section.js';
import { say } from '../support.js';

export const noisyNeighbour: BenchSection = {
  letter: 't',
  title: "Noisy neighbour: workspace A's first token, pathway and search while workspace B floods",
  run: async ({ app, ws, llm, worker, startApi }) => {
    // (t) Noisy neighbour: its own fresh API process with the default shares, the same worker.
    // The defaults: a workspace's cap alone (50) and its share while others run (WORKSPACE_RUN_SHARE, 10).
    const defaults = ConfigSchema.parse({});
    const share = Number(process.env.BENCH_NOISY_SHARE ?? defaults.WORKSPACE_RUN_SHARE);
    const served = await startApi({
      WORKSPACE_MAX_ACTIVE_RUNS: String(defaults.WORKSPACE_MAX_ACTIVE_RUNS),
      WORKSPACE_RUN_SHARE: String(share),
      // BENCH_NOISY_SHARED_SLOTS: the admission's slots per workspace while another is active (to compare).
      // BENCH_NOISY_API_NODE_OPTIONS: Node options for this API process alone, e.g. `--require <a preload that starts
      // the inspector's profiler>` (Node refuses `--cpu-prof` in NODE_OPTIONS).
      ...(process.env.BENCH_NOISY_API_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NOISY_API_NODE_OPTIONS } : {}),
      ...(process.env.BENCH_NOISY_SHARED_SLOTS
        ? { ADMISSION_WORKSPACE_SHARED_SLOTS: process.env.BENCH_NOISY_SHARED_SLOTS }
        : {}),
    });
    const b = await buildWorkspace(app);
    const t = await measureNoisyNeighbour({
      api: served.client,
      a: ws,
      b,
      llm,
      say,
      runs: Number(process.env.BENCH_NOISY_RUNS ?? 500),
      samples: Number(process.env.BENCH_NOISY_SAMPLES ?? 10),
      share,
      boundMs: 300_000,
      cpu: (named = []) =>
        treeCpu(
          new Map<number, string>([
            ...(served.pid ? [[served.pid, 'api'] as [number, string]] : []),
            ...(worker.pid ? [[worker.pid, 'worker'] as [number, string]] : []),
            [process.pid, 'bench'],
            ...named,
          ]),
        ),
    });
    await served.stop();
    return noisySummary(t);
  },
};
