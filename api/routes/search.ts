import { notFound, validationError } from '../../src/kernel/errors.js';
import type { Scope } from '../../src/kernel/scope.js';
import { LISTABLE_TYPES, SEARCH_TYPES, typeOf, type SearchType } from '../../src/search/index.js';
import type { Services } from '../../src/compose/services.js';
import {
  AsyncSearchQuery,
  AsyncSearchStarted,
  BrowseBody,
  BrowseQuery,
  BrowseResult,
  GrepBody,
  GrepResult,
  RecollectionSearchBody,
  RecollectionSearchResult,
  ResourceTree,
  ResourceTreeBody,
  SearchBody,
  SearchResult,
} from '../../src/search/index.js';
import { presentAsset, presentArtifact, presentMemory } from '../presenters/knowledge.js';
import { presentMeeting } from '../presenters/meetings.js';
import { presentNeuron } from '../presenters/neurons.js';
import { presentPathway } from '../presenters/pathways.js';
import { presentReceptor } from '../presenters/receptors.js';
import { presentReflex } from '../presenters/reflexes.js';
import { areaRoutes } from '../route.js';
import { own } from '../../src/kernel/own.js';

/** Search, and each resource type's own service for `full_heads` (read under that service's rules). */
type SearchApi = Pick<
  Services,
  'search' | 'workspaces' | 'neurons' | 'pathways' | 'receptors' | 'reflexes' | 'documents' | 'memories' | 'meetings'
>;
const route = areaRoutes((s): SearchApi => ({
  search: s.search,
  workspaces: s.workspaces,
  neurons: s.neurons,
  pathways: s.pathways,
  receptors: s.receptors,
  reflexes: s.reflexes,
  documents: s.documents,
  memories: s.memories,
  meetings: s.meetings,
}));

const tags = ['search'];

/** Full resource documents for `full_heads`, read through each type's own service (its rules apply; what the caller may not read is left out). */
const fullHead: Partial<Record<SearchType, (s: SearchApi, scope: Scope, id: string) => Promise<unknown>>> = {
  neurons: async (s, scope, id) => presentNeuron(await s.neurons.get(scope, id)),
  pathways: async (s, scope, id) => presentPathway(await s.pathways.get(scope, id)),
  receptors: async (s, scope, id) => presentReceptor(await s.receptors.catalogGet(scope, id)),
  reflexes: async (s, scope, id) => presentReflex(await s.reflexes.get(scope, id)),
  assets: async (s, scope, id) => presentAsset(await s.documents.get(scope, id, 'asset')),
  artifacts: async (s, scope, id) => presentArtifact(await s.documents.get(scope, id, 'artifact')),
  memories: async (s, scope, id) => presentMemory(await s.memories.get(scope, id)),
  meetings: async (s, scope, id) => presentMeeting(await s.meetings.get(scope, id)),
};

async function browse(
  services: SearchApi,
  scope: Scope,
  b: { type: string; limit: number; offset: number; full_heads: boolean },
) {
  const page = await services.search.browse(scope, b);
  if (!b.full_heads) return page;
  const load = own(fullHead, page.type);
  const heads = load
    ? (await Promise.all(page.results.map((r) => load(services, scope, r.id).catch(() => null)))).filter(
        (h) => h !== null,
      )
    : page.results;
  return { ...page, heads };
}

/** Discovery: grep, search, browse and the resource tree (docs/search.md). */
export default [
  route({
    method: 'post',
    path: '/v1/grep',
    summary: 'List or match resources by name',
    operationId: 'grep.run',
    brain: 'required',
    body: GrepBody,
    response: GrepResult,
    tags,
    description:
      'List a type (type, type/) or match type/pattern on names and descriptions (content for memories and artifacts)',
    handler: async ({ body, scope, services }) => services.search.grep(scope, body),
  }),
  route({
    method: 'post',
    path: '/v1/search',
    summary: 'Search resources of one type',
    operationId: 'search.query',
    brain: 'optional',
    body: SearchBody,
    response: SearchResult,
    tags,
    description:
      "Search one type: hybrid (BM25 and vectors fused by RRF), lexical or vector; explain shows each hit's ranks",
    handler: async ({ body, scope, services }) => services.search.search(scope, body),
  }),
  route({
    method: 'get',
    path: '/v1/search',
    summary: 'Start a search across types as a job',
    operationId: 'search.start',
    brain: 'optional',
    query: AsyncSearchQuery,
    response: AsyncSearchStarted,
    status: 202,
    tags,
    description:
      "Start a multi-type search as a job (workflow search): one activity per type; the job result holds every type's hits",
    handler: async ({ query, scope, services }) => {
      if (query.types && query.type) throw validationError('types: send types or type, not both');
      const names = query.types ?? (query.type ? [query.type] : [...SEARCH_TYPES]);
      if (!names.length) throw validationError('types: name at least one type');
      const types = [...new Set(names.map((n) => typeOf(n, LISTABLE_TYPES, 'types')))];
      return { job_id: await services.search.startAsync(scope, { ...query, types }) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/browse',
    summary: 'Browse resources of one type',
    operationId: 'browse.list',
    brain: 'optional',
    query: BrowseQuery,
    response: BrowseResult,
    tags,
    description: 'List the resources of one type visible in the brain, newest first',
    handler: async ({ query, scope, services }) => browse(services, scope, query),
  }),
  route({
    method: 'post',
    path: '/v1/browse',
    summary: 'Browse resources of one type (options in the body)',
    operationId: 'browse.query',
    brain: 'optional',
    body: BrowseBody,
    response: BrowseResult,
    tags,
    description: 'List the resources of one type (limit 1 to 200); full_heads adds the full resource documents',
    handler: async ({ body, scope, services }) => browse(services, scope, body),
  }),
  route({
    method: 'post',
    path: '/v1/browse/resource-tree',
    summary: "Browse a brain's resource tree",
    brain: 'optional',
    body: ResourceTreeBody,
    response: ResourceTree,
    tags,
    description:
      'The resource tree of a brain: types, folders, resources; parent_keys reads several parents at once; cursor pages one parent',
    handler: async ({ body, scope, services }) => {
      const brainId = body.brain_id ?? scope.brainId;
      if (!brainId) throw validationError('brain_id: required (or send X-Brain-Id)');
      if (body.brain_id && !(await services.workspaces.findBrain(scope.workspaceId, body.brain_id)))
        throw notFound('Brain not found');
      return services.search.tree(scope, { ...body, brainId });
    },
  }),
  route({
    method: 'post',
    path: '/v1/recollections/search',
    summary: 'Search the memories of some owners',
    brain: 'optional',
    body: RecollectionSearchBody,
    response: RecollectionSearchResult,
    tags: ['recollections', ...tags],
    description: 'Search the memories of some owners: vector (default; qdrant is a synonym), fulltext or hybrid',
    handler: async ({ body, scope, services }) => {
      if (body.brain_id && scope.brainId && body.brain_id !== scope.brainId)
        throw validationError('brain_id: differs from X-Brain-Id');
      if (body.brain_id && !(await services.workspaces.findBrain(scope.workspaceId, body.brain_id)))
        throw notFound('Brain not found');
      return services.search.recollections(body.brain_id ? { ...scope, brainId: body.brain_id } : scope, body);
    },
  }),
];
