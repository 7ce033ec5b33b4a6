import type { Services } from '../src/services/index.js';
import { createRunActivities } from './runs.js';

/** Every activity, assembled from per-area factories; wired only in worker/index.ts (and tests). */
export const createActivities = (deps: { services: Services }) => ({
  ...createRunActivities(deps),
});
export type Activities = ReturnType<typeof createActivities>;
