import { z } from 'zod';
import { LISTABLE_TYPES, SEARCH_TYPES } from './query.js';
import { QueryBool, Uuid } from '../kernel/schemas.js';

/** Request and response shapes of grep, search, browse, the resource tree and recollection search (docs/search.md). */

const Query = z.string().trim().min(1, 'must not be empty').max(1000);
const TypeName = z.string().trim().min(1).max(40);
const SearchMode = z.enum(['hybrid', 'lexical', 'vector'], { message: 'must be hybrid, lexical or vector' });
const Keyword = z.string().trim().min(1).max(200);

export const GrepBody = z
  .object({
    query: Query.meta({
      description:
        'type, type/ or bare type lists the type; type/pattern matches names and descriptions (and content for memories and artifacts), case-insensitively',
    }),
    limit: z.coerce.number().int().min(1).max(500).default(100),
  })
  .meta({ id: 'GrepBody' });

const Hit = z.object({
  path: z.string(),
  title: z.string(),
  snippet: z.string(),
  url: z.string().optional(),
  score: z.number().optional(),
});
export const GrepResult = z.object({ type: z.string(), results: z.array(Hit) }).meta({ id: 'GrepResult' });

const Weights = z
  .object({ lexical: z.number().min(0).max(100).optional(), vector: z.number().min(0).max(100).optional() })
  .strict();

export const SearchBody = z
  .object({
    query: Query.meta({ description: 'type/pattern, or a bare term (searches neurons); type or type/ lists the type' }),
    search_mode: SearchMode.default('hybrid'),
    filters: z
      .object({ is_active: z.boolean().optional(), visibility: z.enum(['brain', 'workspace', 'core']).optional() })
      .strict()
      .optional(),
    path_prefix: z.string().max(500).optional(),
    pathPrefix: z.string().max(500).optional(),
    keywords: z
      .union([z.string().max(2000), z.array(Keyword).max(50)])
      .optional()
      .meta({ description: 'extra AND terms; a string is split on whitespace' }),
    grep_keywords: z.array(Keyword).max(12, 'at most 12 grep_keywords').optional(),
    limit: z.coerce.number().int().min(1).max(100).default(10),
    offset: z.coerce.number().int().min(0).max(10_000).default(0),
    threshold: z
      .number()
      .min(-1)
      .max(1)
      .optional()
      .meta({ description: 'minimum vector similarity, applied after fusion to hits only the vector leg found' }),
    explain: z.boolean().default(false),
    weights: Weights.optional().meta({
      description: 'RRF weight of each leg (default SEARCH_LEXICAL_WEIGHT, SEARCH_VECTOR_WEIGHT)',
    }),
  })
  .transform(({ pathPrefix, ...b }) => ({ ...b, path_prefix: b.path_prefix ?? pathPrefix }))
  .meta({ id: 'SearchBody' });

const Explain = z.object({
  lexical: z.object({ rank: z.number(), score: z.number() }).nullable(),
  vector: z.object({ rank: z.number(), similarity: z.number() }).nullable(),
  fused: z.number(),
  k: z.number(),
  weights: z.object({ lexical: z.number(), vector: z.number() }),
  kept_by_lexical: z.boolean().optional(),
});
export const SearchHit = z
  .object({
    type: z.string(),
    id: z.string(),
    path: z.string(),
    title: z.string(),
    snippet: z.string(),
    similarity: z.number(),
    score: z.number(),
    url: z.string(),
    chunk_id: z.string().optional(),
    updated_at: z.string().optional(),
    is_active: z.boolean().optional(),
    explain: Explain.optional(),
  })
  .meta({ id: 'SearchHit' });
const NormalizedHit = z
  .object({
    type: z.string(),
    id: z.string(),
    title: z.string(),
    path: z.string(),
    snippet: z.string(),
    url: z.string(),
    score: z.number(),
    similarity: z.number(),
    chunk_id: z.string().optional(),
  })
  .meta({ id: 'NormalizedHit' });
export const SearchResult = z
  .object({
    type: z.string(),
    results: z.array(SearchHit),
    normalized: z.array(NormalizedHit),
    total: z.number(),
    search_mode: z.string(),
  })
  .meta({ id: 'SearchResult' });

/** `types` as a name, a comma list or a JSON array of names. */
const TypesParam = z
  .string()
  .max(1000)
  .transform((s, ctx) => {
    let names: unknown = s;
    if (s.trim().startsWith('[')) {
      try {
        names = JSON.parse(s);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a type name or a JSON array of type names' });
        return z.NEVER;
      }
    }
    const list = Array.isArray(names) ? names : String(names).split(',');
    if (!list.every((n) => typeof n === 'string')) {
      ctx.addIssue({ code: 'custom', message: 'must be a type name or a JSON array of type names' });
      return z.NEVER;
    }
    return (list as string[]).map((n) => n.trim()).filter(Boolean);
  });
export const AsyncSearchQuery = z.object({
  q: Query,
  types: TypesParam.optional(),
  type: TypeName.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(10),
  offset: z.coerce.number().int().min(0).max(10_000).default(0),
  is_active: QueryBool.optional(),
  search_mode: SearchMode.default('hybrid'),
});
export const AsyncSearchStarted = z.object({ job_id: Uuid }).meta({ id: 'AsyncSearchStarted' });

export const BrowseQuery = z.object({
  type: TypeName.meta({ description: `one of ${LISTABLE_TYPES.join(', ')}` }),
  limit: z.coerce.number().int().min(1, 'must be between 1 and 200').max(200, 'must be between 1 and 200').default(50),
  offset: z.coerce.number().int().min(0).default(0),
  full_heads: QueryBool.default(false),
});
export const BrowseBody = z
  .object({
    type: TypeName,
    limit: z.number().int().min(1, 'must be between 1 and 200').max(200, 'must be between 1 and 200').default(50),
    offset: z.number().int().min(0).default(0),
    full_heads: z.boolean().default(false),
  })
  .meta({ id: 'BrowseBody' });
export const BrowseResult = z
  .object({
    type: z.string(),
    results: z.array(SearchHit.omit({ similarity: true, score: true, explain: true })),
    total: z.number(),
    limit: z.number(),
    offset: z.number(),
    heads: z.array(z.record(z.string(), z.unknown())).optional(),
  })
  .meta({ id: 'BrowseResult' });

const ParentKey = z.string().trim().min(1).max(600);
export const ResourceTreeBody = z
  .object({
    parent_key: ParentKey.optional(),
    parent_keys: z.array(ParentKey).min(1).max(50).optional(),
    brain_id: Uuid.optional(),
    limit: z.number().int().min(1).max(500).default(100).meta({ description: 'node cap per parent' }),
    cursor: z.string().max(500).optional().meta({ description: 'next page of one parent (not with parent_keys)' }),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.parent_key !== undefined && b.parent_keys !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['parent_keys'],
        message: 'parent_key and parent_keys are mutually exclusive',
      });
    if (b.cursor !== undefined && b.parent_keys !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['cursor'],
        message: 'cursor pages one parent: send parent_key (or none for the root), not parent_keys',
      });
  })
  .meta({ id: 'BrowseResourceTreeBody' });
const TreeNode = z.object({
  key: z.string(),
  label: z.string(),
  kind: z.enum(['type', 'folder', 'resource']),
  type: z.string(),
  has_children: z.boolean(),
  count: z.number().optional(),
  id: z.string().optional(),
  url: z.string().optional(),
  updated_at: z.string().optional(),
});
const TreeLevel = z.object({
  parent_key: z.string().nullable(),
  nodes: z.array(TreeNode),
  total: z.number(),
  next_cursor: z.string().nullable(),
});
export const ResourceTree = z
  .object({
    brain_id: z.string(),
    parent_key: z.string().nullable().optional(),
    nodes: z.array(TreeNode).optional(),
    total: z.number().optional(),
    next_cursor: z.string().nullable().optional(),
    results: z.array(TreeLevel).optional(),
  })
  .meta({ id: 'BrowseResourceTree' });

export const RecollectionSearchBody = z
  .object({
    query: Query,
    owner_type: z.string().trim().min(1).max(40),
    owner_ids: z.array(z.string().trim().min(1).max(100)).max(500),
    limit: z.number().int().min(1).max(100).default(10),
    threshold: z.number().min(-1).max(1).default(0.7),
    strategy: z
      .enum(['vector', 'qdrant', 'fulltext', 'hybrid'], { message: 'must be vector, qdrant, fulltext or hybrid' })
      .default('vector'),
    context: z.string().max(500).optional(),
    neuron_id: z.string().max(100).optional(),
    project: z.string().max(500).optional(),
    trace_id: z.string().max(100).optional(),
    tags: z.array(z.string().min(1).max(100)).max(50).optional(),
    brain_id: Uuid.optional(),
  })
  .meta({ id: 'RecollectionSearchBody' });
export const RecollectionSearchResult = z
  .object({
    strategy: z.string(),
    total: z.number(),
    results: z.array(
      z.object({
        memory_id: z.string(),
        name: z.string(),
        snippet: z.string(),
        similarity: z.number(),
        score: z.number(),
        owner_type: z.string().nullable(),
        owner_id: z.string().nullable(),
        tags: z.array(z.string()),
        url: z.string(),
        chunk_id: z.string().optional(),
      }),
    ),
  })
  .meta({ id: 'RecollectionSearchResult' });

export { SEARCH_TYPES };
