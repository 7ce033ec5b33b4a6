/**
 * Releases and upgrades (docs/operations.md, "Releases and upgrades"): the release version, the
 * data-format version this release writes, and the start-up step that brings a store to it.
 * The only file other modules import from this area.
 */
import { VERSION } from '../kernel/config.js';
import { closeDeps, type Deps } from '../compose/deps.js';
import type { Services } from '../compose/services.js';
import { DataFormatTooNew, upgradeStore } from './service.js';

export { VERSION };
export { DATA_FORMAT_VERSION, MIGRATIONS } from './migrations.js';
export type { DataFormatRecord, Migration } from './model.js';
export { PLATFORM_COLLECTION } from './store.mongo.js';
export { checkMigrations, DataFormatTooNew, upgradeStore } from './service.js';

/**
 * The entry points' start-up step (api/server.ts, worker/index.ts): upgrade the store, or, on a
 * data format newer than this release, print one line naming both versions and exit 1.
 */
export async function upgradeOrExit(deps: Deps, services: Services, who: string): Promise<void> {
  try {
    await upgradeStore(deps, services);
  } catch (e) {
    if (!(e instanceof DataFormatTooNew)) throw e;
    await closeDeps(deps);
    console.error(`${who}: refusing to start: ${e.message}`);
    process.exit(1);
  }
}
