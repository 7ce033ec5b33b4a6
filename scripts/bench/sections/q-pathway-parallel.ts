/**
 * (q) Pathway parallelism (scripts/bench/measures/pathways.ts): a 20-way fan-out of 1 s delays into a join ÷ one
 * 1 s delay (aim ≤ 1.3); a map of 100 items at concurrency 10 over a 200 ms provider ÷ (10 × one item) (aim ≤ 1.5).
 */
import { measurePathwayParallel, sectionQ } from '../measures/pathways.js';
import { storeCounters, treeCpu } from '../probes.js';
import type { BenchSection } from '../section.js';
import { createNeuron, say } from '../support.js';

export const pathwayParallel: BenchSection = {
  letter: 'q',
  title: 'Pathway parallelism: a 20-way fan-out into a join, and a map of 100 items at concurrency 10',
  run: async ({ app, ws, llm, worker, workerMetricsUrl }) => {
    const names = new Map<number, string>([
      [process.pid, 'bench process (API, provider, clients)'],
      ...(worker.pid ? [[worker.pid, 'worker'] as [number, string]] : []),
    ]);
    const neuronId = await createNeuron(app, ws, 'bench-map');
    const q = await measurePathwayParallel(app, ws, llm, neuronId, say, {
      cpu: () => treeCpu(names),
      store: () => storeCounters(app, workerMetricsUrl),
      history: async (id) => {
        const h = await app.deps.temporal.client.workflow.getHandle(id).fetchHistory();
        return (h.events ?? []).map((e) => ({
          type: Number(e.eventType),
          ms: Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round((e.eventTime?.nanos ?? 0) / 1e6),
        }));
      },
    });
    return sectionQ(q);
  },
};
