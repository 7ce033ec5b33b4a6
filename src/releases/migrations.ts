import type { Migration } from './model.js';

/**
 * The data format's history, oldest first: migration `to: n` turns data of version n - 1 into
 * version n. Append only (a released migration is never edited or removed: stores in the field
 * are at every version), and the last one's `to` is DATA_FORMAT_VERSION. docs/operations.md,
 * "Releases and upgrades", says how to add one.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    // Release 0.1.0 recorded no data format (version 0) and, at every API start, gave pathways
    // stored before slugs their slug and pathways stored before receptors their receptor. Format 1
    // holds both for every pathway; the step runs once, here, instead of at every start.
    to: 1,
    name: 'pathway-slugs-and-receptors',
    async run({ deps, services, log }) {
      const all = await deps.repos.pathways.allSummaries();
      const slugged = await services.pathways.fillSlugs(all);
      const created = await services.receptors.ensureForPathways(all);
      log.info({ pathways: all.length, slugged, receptors_created: created }, 'pathway slugs and receptors filled in');
    },
  },
];

/** The data-format version this release writes and understands (the newest migration's). */
export const DATA_FORMAT_VERSION = 1;
