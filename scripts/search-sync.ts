/**
 * `npm run search:sync`: a full re-sync of the search index from the store into its home
 * (docs/search.md, "Moving an existing deployment into Weaviate"). With CORTEX_SEARCH=weaviate and
 * WEAVIATE_URL set, it walks every resource of every workspace into Weaviate, removes entries the
 * store no longer has, and stores the feed position it started from; API and worker processes
 * started afterwards resume from that position instead of rebuilding. Safe to run while they run.
 */
import { loadConfig } from '../src/kernel/config.js';
import { closeDeps, createDeps } from '../src/compose/deps.js';
import { createLogger } from '../src/kernel/logger.js';
import { createServices } from '../src/compose/services.js';

const config = loadConfig();
const log = createLogger(config.LOG_LEVEL, { component: 'search-sync' });
const deps = await createDeps(config, log);
try {
  const services = createServices(deps);
  if (services.search.kind !== 'weaviate')
    console.log('search:sync: CORTEX_SEARCH is not weaviate; re-syncing the embedded index of this process only');
  const status = await services.search.resyncOnce();
  const b = status.last_build;
  console.log(
    `search:sync (${services.search.kind}): ${b?.resources ?? 0} resource(s) in ${b?.ms ?? '?'} ms; ${status.entries} entries; feed position ${status.applied}`,
  );
  await services.search.stop();
} finally {
  await closeDeps(deps);
}
