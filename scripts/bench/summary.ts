/** The summary printed at the end of a bench run: the machine, the service round trips, then each section's block. */
import os from 'node:os';
import type { Probes } from './probes.js';
import { SUMMARY_ORDER } from './registry.js';
import { fmt } from './support.js';

/** The machine the figures come from. */
function machine(): string {
  const cpus = os.cpus();
  return `  machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GB RAM, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

/** The summary: `blocks` holds the block of each section that ran, by letter; they appear in SUMMARY_ORDER. */
export function summary(p: Probes, blocks: Map<string, string[]>): string {
  const line = '═'.repeat(88);
  return [
    line,
    '  Cortex bench summary (same services, same scripted provider)',
    machine(),
    `  service round trips (medians): Mongo read ${fmt(p.mongoRead)} ms | Mongo write ${fmt(p.mongoWrite)} ms | Redis ${fmt(p.redis)} ms | Temporal RPC ${fmt(p.temporalRpc)} ms`,
    ...SUMMARY_ORDER.flatMap((letter) => {
      const block = blocks.get(letter);
      return block ? ['', ...block] : [];
    }),
    line,
  ].join('\n');
}
