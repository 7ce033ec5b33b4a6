/**
 * (r) Console (scripts/bench/measures/console.ts): bytes transferred (gzip) on the first load of /console and for
 * a run page's graph; the time from a stream entry written to its node's colour changing in the page
 * (Chromium; median over 50 entries).
 */
import { measureConsole, sectionR } from '../measures/console.js';
import type { BenchSection } from '../section.js';
import { say } from '../support.js';

export const consolePage: BenchSection = {
  letter: 'r',
  title: "Console: bytes of the first load and of a run's graph, stream entry to colour change",
  run: async ({ app, ws }) => sectionR(await measureConsole(app, ws, say)).map((x) => `  ${x}`),
};
