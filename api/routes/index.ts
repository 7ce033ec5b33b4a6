import type { RouteDef } from '../route.js';
import connections from './connections.js';
import secrets from './secrets.js';
import webhooks from './webhooks.js';
import interventions from './interventions.js';
import jobs from './jobs.js';
import neuronRuns from './runs.js';
import neurons from './neurons.js';
import openai from './openai.js';
import pathwayRuns from './pathways/runs.js';
import pathways from './pathways/pathways.js';
import platform from './platform.js';
import receptors from './receptors.js';
import reflexes from './reflexes.js';
import resourceEvents from './resource-events.js';
import shares from './shares.js';
import skills from './skills.js';
import traces from './traces.js';
import usage from './usage.js';
import budgets from './budgets.js';
import search from './search.js';
import assets from './knowledge/assets.js';
import artifacts from './knowledge/artifacts.js';
import memories from './knowledge/memories.js';
import knowledgeCatalog from './knowledge/catalog.js';
import meetings from './meetings.js';
import voice from './voice.js';

import stakeholderMaps from './stakeholders.js';
import tenancy from './tenancy.js';
import evaluations from './evaluations.js';

/**
 * The flat list of every mounted route family (OpenAPI walks the same list). Order matters where
 * paths overlap: `voice` comes before `platform` (its POST /v1/chat/attachments must win over the
 * retired POST /v1/chat/:traceId), and stakeholderMaps' literal /v1/resources/stakeholder_maps…
 * paths precede the generic catalog routes of knowledgeCatalog.
 */
const routeFamilies: Record<string, RouteDef[]> = {
  voice,
  tenancy,
  platform,
  traces,
  neurons,
  reflexes,
  connections,
  secrets,
  webhooks,
  neuronRuns,
  jobs,
  interventions,
  pathways,
  pathwayRuns,
  receptors,
  shares,
  resourceEvents,
  skills,
  usage,
  budgets,
  assets,
  artifacts,
  memories,
  stakeholderMaps,
  knowledgeCatalog,
  meetings,
  search,
  evaluations,
  openai,
};
export const allRoutes = (): RouteDef[] => Object.values(routeFamilies).flat();
