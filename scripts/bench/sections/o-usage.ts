/**
 * (o) Usage at scale (scripts/bench/measures/usage.ts): GET /v1/usage and the budget check with 1,000 and with
 * 100,000 ledger rows (BENCH_USAGE_SMALL, BENCH_USAGE_LARGE); the ratio says whether they grow with the ledger (aim ≤ 1.5).
 */
import { formatUsageScale, measureUsageScale } from '../measures/usage.js';
import type { BenchSection } from '../section.js';
import { say } from '../support.js';

export const usageScale: BenchSection = {
  letter: 'o',
  title: 'Usage at scale: GET /v1/usage and the budget check at 1,000 and 100,000 ledger rows',
  run: async ({ app }) => formatUsageScale(await measureUsageScale(app, say)),
};
