/** (f) Stakeholder maps (scripts/bench/measures/stakeholder-maps.ts): patch, live read, diff and briefing. */
import { formatStakeholderMaps, measureStakeholderMaps } from '../measures/stakeholder-maps.js';
import type { BenchSection } from '../section.js';
import { fmt } from '../support.js';

export const stakeholderMaps: BenchSection = {
  letter: 'f',
  title: 'Stakeholder maps: patch, live read, diff and briefing',
  run: async ({ app, ws }) => formatStakeholderMaps(await measureStakeholderMaps(app, ws), fmt),
};
