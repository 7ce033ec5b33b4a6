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
  {
    // Format 2 marks the runs that hold one of their workspace's places (jobs' `holdsPlace`, counted
    // from an index by the fair share): runs stored before it are marked once, here, so that those
    // still pending or running after the upgrade count toward their workspace's share.
    to: 2,
    name: 'job-places',
    async run({ deps, log }) {
      const marked = await deps.repos.jobs.markPlaces();
      log.info({ jobs_marked: marked }, 'runs marked as holding a place');
    },
  },
];

/** The data-format version this release writes and understands (the newest migration's). */
export const DATA_FORMAT_VERSION = 2;
