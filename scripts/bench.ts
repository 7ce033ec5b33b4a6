/**
 * `npm run bench`: the bench's sections by letter (BENCH_ONLY=a,b), one file each under scripts/bench/
 * (what each measures: scripts/bench/index.ts; the list and order: scripts/bench/registry.ts).
 */
import './bench/index.js';
