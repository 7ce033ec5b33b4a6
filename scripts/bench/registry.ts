/**
 * Every bench section, in the order they run (BENCH_ONLY=a,b selects by letter), and the order their
 * blocks appear in the summary. To add a section: a file in sections/ exporting a BenchSection
 * (section.ts), its place in SECTIONS and in SUMMARY_ORDER, and a line in the comment of index.ts.
 */
import type { BenchSection } from './section.js';
import { ttft } from './sections/a-ttft.js';
import { throughput } from './sections/b-throughput.js';
import { pathway } from './sections/c-pathway.js';
import { realistic } from './sections/d-realistic.js';
import { search } from './sections/e-search.js';
import { stakeholderMaps } from './sections/f-stakeholder-maps.js';
import { budgets } from './sections/g-budgets.js';
import { streaming } from './sections/h-streaming.js';
import { roundTrips } from './sections/j-round-trips.js';
import { soak } from './sections/k-soak.js';
import { storedHistory } from './sections/l-stored-history.js';
import { history } from './sections/m-history.js';
import { load } from './sections/n-load.js';
import { usageScale } from './sections/o-usage.js';
import { lists } from './sections/p-lists.js';
import { pathwayParallel } from './sections/q-pathway-parallel.js';
import { consolePage } from './sections/r-console.js';
import { streamWriter } from './sections/s-stream-writer.js';
import { noisyNeighbour } from './sections/t-noisy.js';

/** The order the sections run in: the ones that fill the store ((l), (p), then (m)) last. */
export const SECTIONS: readonly BenchSection[] = [
  ttft,
  throughput,
  pathway,
  pathwayParallel,
  consolePage,
  realistic,
  search,
  stakeholderMaps,
  budgets,
  roundTrips,
  // (h) and (i) run on a compiled API process of their own; (k) restarts the worker after them.
  streaming,
  soak,
  noisyNeighbour,
  usageScale,
  streamWriter,
  load,
  // Last: they fill the store.
  storedHistory,
  lists,
  // After (l): it fills the store with months of history.
  history,
];

/** The order of the sections' blocks in the summary (not the run order). */
export const SUMMARY_ORDER: readonly string[] = [
  'a',
  'b',
  'c',
  'q',
  'r',
  'd',
  'e',
  'f',
  'p',
  'g',
  'o',
  'h',
  's',
  't',
  'j',
  'k',
  'l',
  'm',
  'n',
];
