/**
 * (e) Search (scripts/bench/measures/search.ts): the embedded index and Weaviate at 100k chunks, recall, BM25 agreement,
 * build time and memory, nDCG@10 on the labelled set over the spec documents, browse, tree and grep on
 * Weaviate at 2,000 and 20,000 memories (scripts/bench/measures/search-browse.ts), and API start-up
 * (health, first search, RSS) with 100k and 1M chunks in the store on both homes.
 */
import { measureSearch, searchSummary } from '../measures/search.js';
import type { BenchSection } from '../section.js';
import { say } from '../support.js';

export const search: BenchSection = {
  letter: 'e',
  title: 'Search: the embedded index and Weaviate at 100k chunks, relevance, browse, API start-up',
  run: async () => searchSummary(await measureSearch(say, 'compiled')),
};
