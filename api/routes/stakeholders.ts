import type { z } from 'zod';
import type { StakeholderMapDoc } from '../../src/stakeholders/index.js';
import {
  Briefing,
  BriefingParams,
  BriefingQuery,
  Diff,
  DiffQuery,
  ExtractAccepted,
  ExtractBody,
  GraphLimitsQuery,
  HistoryQuery,
  LiveMap,
  LiveQuery,
  MapCreateBody,
  MapHead,
  MapList,
  MapListQuery,
  MapParams,
  MapRead,
  MapVersionParams,
  PatchBody,
  PatchResult,
  VersionIdParams,
  VersionList,
  VersionListQuery,
  VersionMeta,
  VersionRead,
  VersionSaveBody,
  type GraphLimits,
} from '../../src/stakeholders/index.js';
import type { Services } from '../../src/compose/services.js';
import type { Graph } from '../../src/stakeholders/index.js';
import { presentStakeholderMap, presentStakeholderVersion } from '../presenters/stakeholders.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ stakeholderMaps: s.stakeholderMaps }));

const tags = ['stakeholder-maps'];
const limitsOf = (q: GraphLimits): GraphLimits => ({
  stakeholder_limit: q.stakeholder_limit,
  interaction_limit: q.interaction_limit,
});
/** A live map: the graph's parts at the top level, the map's metadata beside them. */
const liveMap = (
  s: Pick<Services, 'stakeholderMaps'>,
  r: { map: StakeholderMapDoc; graph: Graph; revision: number; at: Date },
  q: GraphLimits,
): z.input<typeof LiveMap> => {
  const view = s.stakeholderMaps.viewOf(r.graph, limitsOf(q));
  return {
    resource_id: r.map._id,
    brain_id: r.map.brainId,
    revision: r.revision,
    latest_version: r.map.latestVersion,
    updated_at: r.at.toISOString(),
    summary: view.summary,
    stakeholders: view.stakeholders,
    interactions: view.interactions,
    edges: view.edges,
    risks: view.risks,
    counts: view.counts,
    truncated: view.truncated,
  };
};
const versionList = (r: Awaited<ReturnType<Services['stakeholderMaps']['versions']>>) => ({
  resource_id: r.map._id,
  versions: r.items.map(presentStakeholderVersion),
  ...presentPage(r),
  latest_version: r.map.latestVersion,
});
const briefingRoute = (path: string, summary: string) =>
  route({
    method: 'get',
    path,
    summary,
    brain: 'optional',
    params: BriefingParams,
    query: BriefingQuery,
    response: Briefing,
    tags,
    description:
      'One stakeholder (by id): recent interactions, alliances, tensions, open risks and suggested discussion points, computed from the live graph',
    handler: async ({ params, query, scope, services }) =>
      services.stakeholderMaps.briefing(scope, params.id, query.interaction_limit),
  });

/**
 * Stakeholder maps (docs/stakeholder-maps.md): the catalog family
 * (/v1/resources/stakeholder_maps…) and the brain's default map (/v1/stakeholder-map…). The
 * literal paths (live, diff) come before /:resourceId, and this family is mounted before the
 * generic catalog routes (/v1/resources/:catalog/:resource_id).
 */
export default [
  route({
    method: 'get',
    path: '/v1/resources/stakeholder_maps/live',
    summary: 'Read a live stakeholder map',
    brain: 'optional',
    query: LiveQuery,
    response: LiveMap,
    tags,
    description: "The live graph of resource_id, or of the X-Brain-Id brain's default map (created on first use)",
    handler: async ({ query, scope, services }) =>
      liveMap(services, await services.stakeholderMaps.live(scope, query.resource_id), query),
  }),
  route({
    method: 'get',
    path: '/v1/resources/stakeholder_maps/diff',
    summary: 'Compare two states of a stakeholder map',
    brain: 'optional',
    query: DiffQuery,
    response: Diff,
    tags,
    description: "from and to are each live or a version number; resource_id defaults to the brain's default map",
    handler: async ({ query, scope, services }) => services.stakeholderMaps.diff(scope, query),
  }),
  route({
    method: 'get',
    path: '/v1/resources/stakeholder_maps',
    summary: 'List stakeholder maps',
    brain: 'optional',
    query: MapListQuery,
    response: MapList,
    tags,
    handler: async ({ query, scope, services }) => {
      const p = await services.stakeholderMaps.list(scope, query);
      return { stakeholder_maps: p.items.map(presentStakeholderMap), ...presentPage(p) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/resources/stakeholder_maps',
    summary: 'Create a stakeholder map',
    status: 201,
    brain: 'optional',
    body: MapCreateBody,
    response: MapHead,
    tags,
    handler: async ({ body, scope, services }) =>
      presentStakeholderMap(await services.stakeholderMaps.create(scope, body)),
  }),
  route({
    method: 'get',
    path: '/v1/resources/stakeholder_maps/:resourceId',
    summary: 'Read a stakeholder map and its live graph',
    brain: 'optional',
    params: MapParams,
    query: GraphLimitsQuery,
    response: MapRead,
    tags,
    handler: async ({ params, query, scope, services }) => {
      const r = await services.stakeholderMaps.live(scope, params.resourceId);
      return {
        stakeholder_map: presentStakeholderMap(r.map),
        live: services.stakeholderMaps.viewOf(r.graph, limitsOf(query)),
      };
    },
  }),
  route({
    method: 'get',
    path: '/v1/resources/stakeholder_maps/:resourceId/history',
    summary: "List a stakeholder map's saved versions",
    brain: 'optional',
    params: MapParams,
    query: HistoryQuery,
    response: VersionList,
    tags,
    description: 'Saved versions, newest first',
    handler: async ({ params, query, scope, services }) =>
      versionList(await services.stakeholderMaps.versions(scope, params.resourceId, query)),
  }),
  route({
    method: 'get',
    path: '/v1/resources/stakeholder_maps/:resourceId/versions/:version',
    summary: 'Read a saved stakeholder map version',
    brain: 'optional',
    params: MapVersionParams,
    query: GraphLimitsQuery,
    response: VersionRead,
    tags,
    handler: async ({ params, query, scope, services }) => {
      const r = await services.stakeholderMaps.version(scope, params.resourceId, params.version);
      return {
        version: presentStakeholderVersion(r.version),
        graph: services.stakeholderMaps.viewOf(r.graph, limitsOf(query)),
      };
    },
  }),
  route({
    method: 'post',
    path: '/v1/resources/stakeholder_map/:resourceId/patch',
    summary: "Edit a stakeholder map's live graph",
    brain: 'optional',
    params: MapParams,
    body: PatchBody,
    response: PatchResult,
    tags,
    description:
      'ops (JSON) or dsl applied to the live graph as one revision; patch_mode stakeholder_map_record_version then records a version (label)',
    handler: async ({ params, body, scope, services }) => {
      const r = await services.stakeholderMaps.patch(scope, params.resourceId, body);
      const none = { stakeholders: [], interactions: [], edges: [], risks: [] };
      return {
        stakeholder_map: presentStakeholderMap(r.map),
        revision: r.revision,
        changes: r.changes ?? { added: none, updated: none, removed: none, summary_changed: false },
        version: r.version ? presentStakeholderVersion(r.version) : null,
      };
    },
  }),
  briefingRoute('/v1/stakeholders/briefing/:id', 'Brief on one stakeholder'),
  route({
    method: 'get',
    path: '/v1/stakeholder-map',
    summary: "Read the brain's live stakeholder map",
    brain: 'optional',
    query: LiveQuery,
    response: LiveMap,
    tags,
    description: "The live graph of the X-Brain-Id brain's default map (or of resource_id)",
    handler: async ({ query, scope, services }) =>
      liveMap(services, await services.stakeholderMaps.live(scope, query.resource_id), query),
  }),
  briefingRoute('/v1/stakeholder-map/briefing/:id', "Brief on one stakeholder of the brain's map"),
  route({
    method: 'post',
    path: '/v1/stakeholder-map/versions',
    summary: 'Save the live stakeholder map as a version',
    status: 201,
    brain: 'optional',
    body: VersionSaveBody,
    response: VersionMeta,
    tags,
    description: "Saves the live graph as the next version of the brain's default map (or of resource_id)",
    handler: async ({ body, scope, services }) =>
      presentStakeholderVersion(await services.stakeholderMaps.saveVersion(scope, body.resource_id, body.label)),
  }),
  route({
    method: 'get',
    path: '/v1/stakeholder-map/versions',
    summary: "List the brain's saved stakeholder map versions",
    brain: 'optional',
    query: VersionListQuery,
    response: VersionList,
    tags,
    handler: async ({ query, scope, services }) =>
      versionList(await services.stakeholderMaps.versions(scope, query.resource_id, query)),
  }),
  route({
    method: 'get',
    path: '/v1/stakeholder-map/versions/:id',
    summary: "Read a saved version of the brain's map",
    brain: 'optional',
    params: VersionIdParams,
    query: GraphLimitsQuery,
    response: VersionRead,
    tags,
    description: "A saved version by its id, or by its number on the X-Brain-Id brain's default map",
    handler: async ({ params, query, scope, services }) => {
      const r = await services.stakeholderMaps.versionByKey(scope, params.id);
      return {
        version: presentStakeholderVersion(r.version),
        graph: services.stakeholderMaps.viewOf(r.graph, limitsOf(query)),
      };
    },
  }),
  route({
    method: 'post',
    path: '/v1/stakeholder-map/extract',
    summary: 'Extract stakeholders from a transcript',
    status: 202,
    brain: 'optional',
    body: ExtractBody,
    response: ExtractAccepted,
    tags,
    description:
      'Starts a job that asks the model for structured JSON from a transcript (text, or a finalized meeting) and applies it to the map as patch ops',
    handler: async ({ body, scope, services }) => services.stakeholderMaps.extract(scope, body),
  }),
];
