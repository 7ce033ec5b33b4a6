import type { Services } from '../src/compose/services.js';
import { createPathwayActivities } from './pathways.js';
import { createIngestActivities } from './knowledge.js';
import { createReceptorActivities } from './receptors.js';
import { createSearchActivities } from './search.js';
import { createRunActivities } from './runs.js';
import { createTranscriptionActivities } from './meetings.js';
import { createStakeholderMapActivities } from './stakeholders.js';
import { createUsageActivities } from './usage.js';
import { createWebhookActivities } from './webhooks.js';
import { createTenancyActivities } from './tenancy.js';
import { createEvaluationActivities } from './evaluations.js';

/** Every activity, assembled from per-area factories; wired only in worker/index.ts (and tests). */
export const createActivities = (deps: { services: Services }) => ({
  ...createRunActivities(deps),
  ...createPathwayActivities(deps),
  ...createReceptorActivities(deps),
  ...createIngestActivities(deps),
  ...createSearchActivities(deps),
  ...createTranscriptionActivities(deps),
  ...createStakeholderMapActivities(deps),
  ...createUsageActivities(deps),
  ...createWebhookActivities(deps),
  ...createTenancyActivities(deps),
  ...createEvaluationActivities(deps),
});
export type Activities = ReturnType<typeof createActivities>;
