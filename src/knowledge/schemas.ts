import { z } from 'zod';
import {
  JsonObject,
  MediaType,
  QueryBool,
  SortDirection,
  Uuid,
  paging,
  PageTotal,
  pageFields,
} from '../kernel/schemas.js';

/** Request and response shapes of assets, artifacts, memories, recollections and the folder routes (docs/knowledge.md). */

const Path = z.string().max(500);
const Name = z.string().trim().min(1).max(300);
const listBase = {
  brain_id: Uuid.optional(),
  path: Path.optional(),
  path_prefix: Path.optional(),
  pathPrefix: Path.optional(),
  sortBy: z.enum(['created_at', 'updated_at', 'name']).default('created_at'),
  sortDirection: SortDirection.default('desc'),
  ...paging(20),
};
export const DocumentListQuery = z
  .object(listBase)
  .transform(({ pathPrefix, ...q }) => ({ ...q, path_prefix: q.path_prefix ?? pathPrefix }));
export const ChunkListQuery = z.object({ ...paging(50, 500), source: z.string().max(100).optional() });
export const ChunkParams = z.object({
  chunk_id: z.string().regex(/^[0-9a-fA-F-]{36}:\d+:\d+$/, 'must be a chunk id (<resource>:<version>:<index>)'),
});
export const StructureQuery = z
  .object({
    path_prefix: Path.optional(),
    pathPrefix: Path.optional(),
    path: Path.optional(),
    brain_id: Uuid.optional(),
  })
  .transform((q) => ({ path_prefix: q.path_prefix ?? q.pathPrefix ?? q.path, brain_id: q.brain_id }));
export const StructureBatchBody = z
  .object({ paths: z.array(Path).min(1).max(50), brain_id: Uuid.optional() })
  .strict()
  .meta({ id: 'StructureBatchBody' });
export const ChunkDeleteQuery = z.object({ source: z.string().min(1).max(100).optional() });

/** Fields that would replace an asset's stored body: refused on PUT with a message that says what to do instead. */
const BODY_FIELDS = ['content', 'body', 'source', 'file', 'data', 'file_url'] as const;
const refuseBody = <T extends z.ZodRawShape>(shape: T) =>
  z
    .object({ ...shape, ...Object.fromEntries(BODY_FIELDS.map((k) => [k, z.unknown().optional()])) })
    .strict()
    .superRefine((b, ctx) => {
      for (const k of BODY_FIELDS) {
        if ((b as Record<string, unknown>)[k] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [k],
            message: 'the stored body of an asset cannot be replaced: ingest a new asset instead',
          });
      }
    });

export const AssetCreateBody = z
  .object({
    name: Name,
    path: Path.optional(),
    metadata: JsonObject.optional(),
    content: z.string().max(5_000_000).optional(),
    content_type: MediaType.optional(),
    skip_embedding: z.boolean().optional(),
    brain_id: Uuid.optional(),
  })
  .strict()
  .meta({ id: 'AssetCreateBody' });
export const AssetIngestBody = z
  .object({
    source: z.discriminatedUnion('type', [
      z.object({ type: z.literal('text'), value: z.string().min(1).max(5_000_000) }).strict(),
      z
        .object({
          type: z.literal('url'),
          value: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2000),
        })
        .strict(),
    ]),
    name: Name.optional(),
    path: Path.optional(),
    metadata: JsonObject.optional(),
    skip_embedding: z.boolean().optional(),
    brain_id: Uuid.optional(),
  })
  .strict()
  .meta({ id: 'AssetIngestBody' });
/** Multipart form fields of an upload (strings, as forms send them). */
export const UploadFields = z
  .object({
    name: Name.optional(),
    path: Path.optional(),
    metadata: z
      .string()
      .max(100_000)
      .optional()
      .transform((s, ctx) => {
        if (s === undefined || s === '') return undefined;
        try {
          const v = JSON.parse(s) as unknown;
          if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
        } catch {
          /* reported below */
        }
        ctx.addIssue({ code: 'custom', message: 'metadata: must be a JSON object' });
        return z.NEVER;
      }),
    skip_embedding: QueryBool.optional(),
    skip_title_description: QueryBool.optional(),
    brain_id: Uuid.optional(),
    description: z.string().max(2000).optional(),
    owner_type: z.enum(['neuron', 'trace']).optional(),
    owner_id: Uuid.optional(),
  })
  .strict();
export const AssetUpdateBody = refuseBody({
  name: Name.optional(),
  path: Path.optional(),
  metadata: JsonObject.optional(),
  skip_embedding: z.boolean().optional(),
})
  .refine(
    (b) => ['name', 'path', 'metadata', 'skip_embedding'].some((k) => (b as Record<string, unknown>)[k] !== undefined),
    'send name, path, metadata or skip_embedding',
  )
  .meta({ id: 'AssetUpdateBody' });

const Ingest = z.object({
  status: z.string(),
  job_id: z.string().nullable(),
  version: z.number(),
  chunk_count: z.number(),
  embedded_count: z.number(),
  embedding_model: z.string().nullable(),
  error: z.string().nullable(),
});
export const Asset = z
  .object({
    id: z.string(),
    kind: z.literal('asset'),
    brain_id: z.string(),
    name: z.string(),
    path: z.string(),
    metadata: JsonObject,
    skip_embedding: z.boolean(),
    content_type: z.string().nullable(),
    size: z.number(),
    sha256: z.string().nullable(),
    source: z.object({ type: z.string(), value: z.string().nullable() }),
    version: z.number(),
    ingest: Ingest,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Asset' });
export const AssetWithJob = z.object({ asset: Asset, job_id: z.string().nullable() });
export const AssetList = z.object({
  assets: z.array(Asset),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});

const EditOp = z.discriminatedUnion('op', [
  z.object({ op: z.literal('replace'), content: z.string().max(5_000_000) }).strict(),
  z.object({ op: z.literal('append'), text: z.string().max(5_000_000) }).strict(),
  z.object({ op: z.literal('prepend'), text: z.string().max(5_000_000) }).strict(),
  z
    .object({
      op: z.literal('search_replace'),
      search: z.string().min(1).max(100_000),
      replace: z.string().max(5_000_000),
      all: z.boolean().optional(),
    })
    .strict(),
]);
const artifactFields = {
  title: Name.optional(),
  content: z.string().max(5_000_000).optional(),
  content_type: MediaType.regex(
    /^text\/|^application\/(json|xml|yaml|x-yaml)/,
    'artifacts are UTF-8 text: a text/* (or JSON, XML, YAML) type',
  ).optional(),
  path: Path.optional(),
  metadata: JsonObject.optional(),
  skip_embedding: z.boolean().optional(),
};
export const ArtifactCreateBody = z
  .object({ ...artifactFields, title: Name, content: z.string().max(5_000_000), brain_id: Uuid.optional() })
  .strict()
  .meta({ id: 'ArtifactCreateBody' });
export const ArtifactUpdateBody = z
  .object({ ...artifactFields, base_version: z.number().int().min(1).optional() })
  .strict()
  .refine(
    (b) => Object.entries(b).some(([k, v]) => k !== 'base_version' && v !== undefined),
    'send title, content, content_type, path, metadata or skip_embedding',
  )
  .meta({ id: 'ArtifactUpdateBody' });
/**
 * The artifact patch envelope (docs/knowledge.md): edits applied in order to the version named by
 * base_version (409 when the artifact moved on), optionally with new title or content_type.
 */
const patchFields = {
  base_version: z.number().int().min(1),
  edits: z.array(EditOp).min(1).max(100).optional(),
  title: Name.optional(),
  content_type: artifactFields.content_type,
  path: Path.optional(),
  metadata: JsonObject.optional(),
};
const hasChange = (b: {
  edits?: unknown[];
  title?: string;
  content_type?: string;
  path?: string;
  metadata?: unknown;
}) =>
  !!b.edits?.length ||
  b.title !== undefined ||
  b.content_type !== undefined ||
  b.path !== undefined ||
  b.metadata !== undefined;
export const ArtifactPatchEnvelope = z
  .object({ artifact_id: Uuid, ...patchFields })
  .strict()
  .refine(hasChange, 'send edits, title, content_type, path or metadata')
  .meta({ id: 'ArtifactPatchEnvelope' });
export const ResourcePatchBody = z
  .object(patchFields)
  .strict()
  .refine(hasChange, 'send edits, title, content_type, path or metadata')
  .meta({ id: 'ResourcePatchBody' });
export const ArtifactBodyQuery = z.object({
  version: z.coerce.number().int().min(1).optional(),
  format: z.enum(['raw', 'markdown', 'text', 'json']).default('raw'),
});

export const Artifact = z
  .object({
    id: z.string(),
    kind: z.literal('artifact'),
    brain_id: z.string(),
    title: z.string(),
    content: z.string(),
    content_type: z.string(),
    path: z.string(),
    metadata: JsonObject,
    skip_embedding: z.boolean(),
    version: z.number(),
    latest_version: z.number(),
    size: z.number(),
    ingest: Ingest,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Artifact' });
export const ArtifactWithJob = z.object({ artifact: Artifact, job_id: z.string().nullable() });
export const ArtifactList = z.object({
  artifacts: z.array(Artifact.omit({ content: true })),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});

export const Chunk = z
  .object({
    id: z.string(),
    resource_id: z.string(),
    resource_kind: z.string(),
    version: z.number(),
    index: z.number(),
    source: z.string(),
    text: z.string(),
    tokens: z.number(),
    path: z.string(),
    embedding_model: z.string().nullable(),
    embedding_dimension: z.number().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'Chunk' });
export const ChunkList = z.object({
  chunks: z.array(Chunk),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});
export const DocumentVersion = z.object({
  version: z.number(),
  changes: z.array(z.string()),
  name: z.string(),
  path: z.string(),
  metadata: JsonObject,
  skip_embedding: z.boolean(),
  content_type: z.string().nullable(),
  size: z.number(),
  created_by: z.string().nullable(),
  created_at: z.string(),
  content: z.string().optional(),
});
export const VersionList = z.object({ versions: z.array(DocumentVersion), total: z.number() });
export const Structure = z
  .object({
    path: z.string(),
    folders: z.array(z.object({ path: z.string(), name: z.string(), item_count: z.number() })),
    items: z.array(z.object({ id: z.string(), name: z.string(), path: z.string() })),
    total: z.number(),
  })
  .meta({ id: 'FolderStructure' });

// ---- memories and recollections ----
export const MemoryListQuery = z.object({
  source_type: z.enum(['text', 'file']).optional(),
  owner_type: z.enum(['neuron', 'trace']).optional(),
  owner_id: Uuid.optional(),
  brain_id: Uuid.optional(),
  sortBy: z.enum(['created_at', 'updated_at', 'name']).default('created_at'),
  sortDirection: SortDirection.default('desc'),
  ...paging(20),
});
export const MemoryCreateBody = z
  .object({
    name: Name,
    description: z.string().max(2000).optional(),
    source_type: z.enum(['text', 'file']),
    content: z.string().max(5_000_000).optional(),
    owner_type: z.enum(['neuron', 'trace']).optional(),
    owner_id: Uuid.optional(),
    metadata: JsonObject.optional(),
    tags: z.array(z.string().min(1).max(100)).max(50).optional(),
    skip_embedding: z.boolean().optional(),
    brain_id: Uuid.optional(),
  })
  .strict()
  .meta({ id: 'MemoryCreateBody' });
export const MemoryIngestBody = z
  .object({
    content: z.string().min(1).max(5_000_000).optional(),
    file_url: z
      .url({ protocol: /^https?$/, message: 'file_url must be an http or https URL' })
      .max(2000)
      .optional(),
    name: Name.optional(),
    description: z.string().max(2000).optional(),
    owner_type: z.enum(['neuron', 'trace']).optional(),
    owner_id: Uuid.optional(),
    skip_title_description: z.boolean().default(false),
    skip_embedding: z.boolean().default(false),
    metadata: JsonObject.optional(),
    tags: z.array(z.string().min(1).max(100)).max(50).optional(),
    brain_id: Uuid.optional(),
  })
  .strict()
  .refine((b) => (b.content !== undefined) !== (b.file_url !== undefined), 'send content or file_url (one of them)')
  .meta({ id: 'MemoryIngestBody' });
export const BulkDeleteBody = z
  .object({ ids: z.array(Uuid).min(1).max(1000) })
  .strict()
  .meta({ id: 'MemoryBulkDeleteBody' });
export const Memory = z
  .object({
    id: z.string(),
    kind: z.literal('memory'),
    brain_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    source_type: z.string(),
    owner_type: z.string().nullable(),
    owner_id: z.string().nullable(),
    tags: z.array(z.string()),
    metadata: JsonObject,
    content_type: z.string().nullable(),
    size: z.number(),
    file_name: z.string().nullable(),
    skip_embedding: z.boolean(),
    title_source: z.string(),
    title_model: z.string().nullable(),
    ingest: Ingest,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Memory' });
export const MemoryWithJob = z.object({ memory: Memory, job_id: z.string().nullable() });
export const MemoryList = z.object({
  memories: z.array(Memory),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});

export const RecollectionCreateBody = z
  .object({
    name: Name,
    description: z.string().max(2000).optional(),
    resource_ids: z.array(Uuid).max(1000).optional(),
    brain_id: Uuid.optional(),
  })
  .strict()
  .meta({ id: 'RecollectionCreateBody' });
export const RecollectionUpdateBody = z
  .object({
    name: Name.optional(),
    description: z.string().max(2000).nullable().optional(),
    resource_ids: z.array(Uuid).max(1000).optional(),
    add_resource_ids: z.array(Uuid).max(1000).optional(),
    remove_resource_ids: z.array(Uuid).max(1000).optional(),
  })
  .strict()
  .refine(
    (b) => Object.values(b).some((v) => v !== undefined),
    'send name, description, resource_ids, add_resource_ids or remove_resource_ids',
  )
  .meta({ id: 'RecollectionUpdateBody' });
export const Recollection = z
  .object({
    id: z.string(),
    kind: z.literal('recollection'),
    brain_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    members: z.array(z.object({ resource_id: z.string(), resource_kind: z.string() })).optional(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Recollection' });
export const RecollectionList = z.object({
  recollections: z.array(Recollection),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});
export const RecollectionStats = z.object({
  resource_count: z.number(),
  chunk_count: z.number(),
  embedding_lane_chunk_row_count: z.number(),
});

// ---- folders and catalog ----
export const TreeQuery = z.object({
  tree_profile: z.enum(['document', 'broad']).default('document'),
  path_prefix: Path.optional(),
  brain_id: Uuid.optional(),
  limit: z.coerce.number().int().min(1).max(5000).default(1000),
});
export const MoveBody = z
  .object({
    move_profile: z.enum(['document', 'broad']).default('document'),
    moves: z
      .array(z.object({ resource_id: Uuid, path: Path }).strict())
      .max(500)
      .optional(),
    resource_ids: z.array(Uuid).max(500).optional(),
    path: Path.optional(),
  })
  .strict()
  .refine(
    (b) => (b.moves?.length ?? 0) > 0 || ((b.resource_ids?.length ?? 0) > 0 && b.path !== undefined),
    'send moves: [{ resource_id, path }] or resource_ids with path',
  )
  .transform((b) => ({
    move_profile: b.move_profile,
    moves: [...(b.moves ?? []), ...(b.resource_ids ?? []).map((resource_id) => ({ resource_id, path: b.path! }))],
  }))
  .meta({ id: 'MoveBody' });
export const CatalogParams = z.object({ catalog: z.string(), resource_id: Uuid });
export const PatchParams = z.object({ kind: z.string(), resource_id: Uuid });
