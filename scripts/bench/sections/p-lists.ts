/**
 * (p) Lists (scripts/bench/measures/lists.ts, alone: `npm run bench:lists`): pages of jobs, traces and
 * interventions, the summary and a public token at 1,000 and at 100,000 rows (aim: ratio ≤ 1.5).
 * Runs near the end: it fills the store.
 */
import { formatLists, measureLists } from '../measures/lists.js';
import type { BenchSection } from '../section.js';
import { say } from '../support.js';

export const lists: BenchSection = {
  letter: 'p',
  title: 'Lists: pages of jobs, traces and interventions, the summary and a public token at 1,000 and 100,000 rows',
  run: async ({ app }) => formatLists(await measureLists(app, say)),
};
