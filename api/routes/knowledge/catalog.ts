import type { Services } from '../../../src/compose/services.js';
import { z } from 'zod';
import { notFound, validationError } from '../../../src/kernel/errors.js';
import { CatalogParams, MoveBody, PatchParams, ResourcePatchBody, TreeQuery } from '../../../src/knowledge/index.js';
import { priceOf, pricesAt } from '../../../src/llm/pricing.js';
import { presentArtifact, presentAsset, presentMemory, presentRecollection } from '../../presenters/knowledge.js';
import { presentReflex } from '../../presenters/reflexes.js';
import { presentMeeting } from '../../presenters/meetings.js';
import { MeetingPatchBody } from '../../../src/meetings/index.js';
import { areaRoutes, type HandlerInput } from '../../route.js';

/** The catalog and each resource family it files (documents, memories, meetings, reflexes, skills). */
type CatalogApi = Pick<
  Services,
  'catalog' | 'documents' | 'embedder' | 'ingest' | 'meetings' | 'memories' | 'reflexes' | 'skills'
>;
const route = areaRoutes((s): CatalogApi => ({
  catalog: s.catalog,
  documents: s.documents,
  embedder: s.embedder,
  ingest: s.ingest,
  meetings: s.meetings,
  memories: s.memories,
  reflexes: s.reflexes,
  skills: s.skills,
}));

const tags = ['resources'];
const TreeRow = z.object({
  id: z.string(),
  kind: z.string(),
  name: z.string(),
  path: z.string(),
  brain_id: z.string(),
  updated_at: z.string(),
});
const Tree = z
  .object({
    profile: z.string(),
    path: z.string(),
    folders: z.array(z.object({ path: z.string(), name: z.string(), item_count: z.number() })),
    items: z.array(TreeRow),
    rows: z.array(TreeRow),
    total: z.number(),
    truncated: z.boolean(),
  })
  .meta({ id: 'ResourceTree' });

/**
 * Catalog reads by kind (the neuron and receptor catalogs have their own routes). A Map: the
 * path's `:catalog` never reaches an object's prototype (`constructor` once read the handler input).
 */
type CatalogRead = (
  i: HandlerInput<z.output<typeof CatalogParams>, unknown, unknown, CatalogApi>,
) => Promise<Record<string, unknown>>;
const CATALOGS = new Map<string, CatalogRead>(
  Object.entries({
    assets: async ({ params, scope, services }) => ({
      asset: presentAsset(await services.documents.get(scope, params.resource_id, 'asset')),
    }),
    artifacts: async ({ params, scope, services }) => ({
      artifact: presentArtifact(await services.documents.get(scope, params.resource_id, 'artifact')),
    }),
    memories: async ({ params, scope, services }) => ({
      memory: presentMemory(await services.memories.get(scope, params.resource_id)),
    }),
    recollections: async ({ params, scope, services }) => ({
      recollection: presentRecollection(await services.memories.getRecollection(scope, params.resource_id)),
    }),
    skills: async ({ params, scope, services }) => {
      const s = await services.skills.get(scope, params.resource_id);
      return {
        skill: {
          id: s._id,
          brain_id: s.brainId,
          name: s.name,
          skill_path: s.skillPath,
          body_md: s.bodyMd,
          latest_version: s.latestVersion,
          kind: 'skill',
        },
      };
    },
    reflexes: async ({ params, scope, services }) => ({
      reflex: presentReflex(await services.reflexes.get(scope, params.resource_id)),
    }),
    meetings: async ({ params, scope, services }) => ({
      meeting: presentMeeting(await services.meetings.get(scope, params.resource_id)),
    }),
  } satisfies Record<string, CatalogRead>),
);

/** The central patch per kind: each parses its own envelope (a clear 400 names the field). */
type PatchInput = HandlerInput<z.output<typeof PatchParams>, unknown, unknown, CatalogApi>;
const patchArtifact = async ({ params, body, scope, services }: PatchInput) => {
  const { doc, jobId } = await services.documents.updateArtifact(
    scope,
    params.resource_id,
    ResourcePatchBody.parse(body),
  );
  return { artifact: presentArtifact(doc), job_id: jobId };
};
const patchMeeting = async ({ params, body, scope, services }: PatchInput) => ({
  meeting: presentMeeting(await services.meetings.patch(scope, params.resource_id, MeetingPatchBody.parse(body))),
});
const PATCHES = new Map<string, (i: PatchInput) => Promise<Record<string, unknown>>>([
  ['artifact', patchArtifact],
  ['artifacts', patchArtifact],
  ['meeting', patchMeeting],
  ['meetings', patchMeeting],
]);
// Checked per kind in the handler (ResourcePatchBody for artifacts, MeetingPatchBody for meetings), so a 400 names the kind's own field.
const PatchEnvelope = z.record(z.string(), z.unknown()).meta({
  id: 'CentralPatchBody',
  description: 'ResourcePatchBody (kind artifact) or MeetingPatchBody (kind meeting)',
});

/** Folder tree, moves, catalog reads and the central patch (docs/knowledge.md, "Folders, moves and the catalog"). */
export default [
  route({
    method: 'get',
    path: '/v1/resources/tree',
    summary: 'Read the resource tree',
    brain: 'optional',
    query: TreeQuery,
    response: Tree,
    tags,
    description:
      'tree_profile document (assets and artifacts by folder path; default) or broad (also memories and skills); path_prefix scopes it',
    handler: async ({ query, scope, services }) => services.catalog.tree(scope, query),
  }),
  route({
    method: 'post',
    path: '/v1/resources/tree',
    summary: 'Read the resource tree (options in the body)',
    operationId: 'resources.treeByBody',

    brain: 'optional',
    body: TreeQuery,
    response: Tree,
    tags,
    handler: async ({ body, scope, services }) => services.catalog.tree(scope, body),
  }),
  route({
    method: 'post',
    path: '/v1/resources/move',
    summary: 'Move resources to another folder',
    brain: 'optional',
    body: MoveBody,
    response: z.object({
      moved: z.array(z.object({ id: z.string(), kind: z.string(), from_path: z.string(), to_path: z.string() })),
      not_found: z.array(z.string()),
    }),
    tags,
    description:
      'moves: [{ resource_id, path }] (or resource_ids with path); move_profile document moves assets and artifacts of the X-Brain-Id brain; broad (admins) moves them in any brain',
    handler: async ({ body, scope, services }) => services.catalog.move(scope, body),
  }),
  route({
    method: 'post',
    path: '/v1/resources/:kind/:resource_id/patch',
    summary: 'Patch an artifact or meeting',
    brain: 'optional',
    params: PatchParams,
    body: PatchEnvelope,
    tags,
    description:
      'Central patch: kind artifact takes the artifact envelope (base_version, edits, title, content_type); kind meeting takes body fields (docs/meetings.md)',
    handler: async (i) => {
      const patch = PATCHES.get(i.params.kind);
      if (!patch)
        throw validationError(
          `kind: the central patch applies to ${[...PATCHES.keys()].join(', ')} (got ${i.params.kind})`,
        );
      return patch(i);
    },
  }),
  route({
    method: 'get',
    path: '/v1/resources/:catalog/:resource_id',
    summary: 'Read a resource from the catalog',
    brain: 'optional',
    params: CatalogParams,
    tags,
    description: `Catalog read by kind: ${[...CATALOGS.keys()].join(', ')} (neurons and receptors have their own routes)`,
    handler: async (i) => {
      const read = CATALOGS.get(i.params.catalog);
      if (!read) throw notFound(`Catalog ${i.params.catalog}`);
      return read(i);
    },
  }),
  route({
    method: 'get',
    path: '/v1/config/embedding-model',
    summary: 'Read the embedding model and its dimension',
    response: z.object({ embedding_model: z.string(), embedding_dimension: z.number().nullable() }),
    tags: ['config'],
    description: 'The configured embedding model and its vector dimension',
    handler: async ({ services }) => ({
      embedding_model: services.embedder.model,
      embedding_dimension: services.embedder.dimension,
    }),
  }),
  route({
    method: 'post',
    path: '/v1/config/embedding-model/reembed',
    summary: 'Re-embed resources for the current model',
    roles: ['workspace_admin'],
    tags: ['config'],
    response: z.object({
      model: z.string(),
      started: z.array(z.object({ kind: z.string(), resource_id: z.string(), job_id: z.string() })),
      remaining: z.boolean(),
    }),
    description:
      'After EMBEDDING_MODEL changed: starts an ingest job for each resource without vectors of the current model (200 per call; call again while remaining)',
    handler: async ({ scope, services }) => services.ingest.reembed(scope),
  }),
  route({
    method: 'get',
    path: '/v1/config/cost-estimates',
    summary: 'Read embedding and search cost estimates',
    response: z.object({
      embed_per_1k_tokens_usd: z.number().nullable(),
      embed_model: z.string(),
      rerank_per_query_usd: z.number(),
      vector_search_per_query_usd: z.number(),
      priced: z.boolean(),
    }),
    tags: ['config'],
    description:
      'From the price table in force: embedding per 1k tokens (null when the model is unpriced); reranking and vector search run in process (0)',
    handler: async ({ services }) => {
      const model = services.embedder.model;
      const price = priceOf(model, pricesAt().prices);
      return {
        embed_per_1k_tokens_usd: price ? price.input / 1000 : null,
        embed_model: model,
        rerank_per_query_usd: 0,
        vector_search_per_query_usd: 0,
        priced: !!price,
      };
    },
  }),
];
