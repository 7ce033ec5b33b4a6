import { z } from 'zod';
import { CompiledGraph, GraphOverrides } from './graph.js';
import { JsonObject, SortDirection, Uuid, paging, PageTotal, pageFields, strictBody } from '../kernel/schemas.js';

/** Pathway participant roles; owner ⊇ editor ⊇ viewer. */
const PathwayRole = z.enum(['owner', 'editor', 'viewer']);
type PathwayRole = z.infer<typeof PathwayRole>;

/** A stored version number in a path: a positive integer (anything else is 400, not 404). */
const PathwayVersionNumber = z
  .string()
  .regex(/^[1-9]\d{0,8}$/, 'version must be a positive integer')
  .transform(Number);

export const PathwayIdParams = z.object({ id: Uuid });
export const PathwayVersionParams = z.object({ id: Uuid, version: PathwayVersionNumber });
export const ParticipantIdParams = z.object({ participantId: Uuid });
export const PathwayUserParams = z.object({ id: Uuid, userId: Uuid });

export const PathwayListQuery = z
  .object({
    createdBy: Uuid.optional().meta({ description: 'creator: user id (JWT) or API key id' }),
    search: z.string().max(200).optional().meta({ description: 'case-insensitive substring of the name' }),
    ...paging(20),
    sortBy: z.enum(['created_at', 'updated_at', 'name']).default('created_at'),
    sortDirection: SortDirection.default('desc'),
  })
  .meta({ id: 'PathwayListQuery' });
export type PathwayListQuery = z.infer<typeof PathwayListQuery>;

/**
 * The execution graph. Requests are parsed as an object and checked by pathway validation (which
 * names the node id and field of every problem); the document publishes the format itself.
 */
const graphField = JsonObject.meta({
  description: 'execution graph, id-based: { nodes: [{ id, type, data }], edges: [{ id, source, target, handle? }] }',
  override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
    for (const k of Object.keys(jsonSchema)) delete jsonSchema[k];
    jsonSchema.$ref = '#/components/schemas/PathwayGraph';
  },
});
const dataField = JsonObject.meta({
  description: 'design graph for the visual editor; stored and returned exactly as sent',
});

export const PathwayCreateBody = z
  .object({
    name: z.string().trim().min(1, 'name is required').max(200),
    description: z.string().max(5000).nullish(),
    pathway_graph: graphField.optional(),
    pathway_data: dataField.optional(),
    is_active: z.boolean().default(true),
  })
  .meta({ id: 'PathwayCreateBody' });
export type PathwayCreateBody = z.infer<typeof PathwayCreateBody>;

export const PathwayUpdateBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    description: z.string().max(5000).nullish(),
    pathway_graph: graphField.optional(),
    pathway_data: dataField.optional(),
    is_active: z.boolean().optional(),
  })
  .refine(
    (b) => Object.values(b).some((v) => v !== undefined),
    'send at least one of name, description, pathway_graph, pathway_data, is_active',
  )
  .meta({ id: 'PathwayUpdateBody' });
export type PathwayUpdateBody = z.infer<typeof PathwayUpdateBody>;

export const PathwayPromoteBody = z
  .object({
    workspace_id: Uuid.optional().meta({ description: "when sent, must be the credential's workspace (else 403)" }),
  })
  .meta({ id: 'PathwayPromoteBody' });
export type PathwayPromoteBody = z.infer<typeof PathwayPromoteBody>;

/** The graph itself (React Flow's `toObject()` output is accepted: its `viewport` is ignored). */
export const PathwayValidateBody = strictBody(
  {
    nodes: z.array(z.unknown()).optional().meta({ description: 'id-based nodes { id, type, data }' }),
    edges: z.array(z.unknown()).optional().meta({ description: 'id-based edges { id, source, target, handle? }' }),
    viewport: z.unknown().optional().meta({ description: "an editor's viewport; ignored" }),
  },
  'validate takes the graph itself, {"nodes": [...], "edges": [...]}; for a create body, send its pathway_graph',
).meta({ id: 'PathwayValidateBody' });
export type PathwayValidateBody = z.infer<typeof PathwayValidateBody>;

export const PathwayCompileBody = z
  .object({
    pathway: z
      .looseObject({ nodes: z.array(z.unknown()).optional(), edges: z.array(z.unknown()).optional() })
      .meta({ description: 'graph to compile, either form' }),
    payload: JsonObject.optional().meta({ description: 'preview input, echoed as preview.input' }),
    overrides: GraphOverrides.optional(),
  })
  .meta({ id: 'PathwayCompileBody' });
export type PathwayCompileBody = z.infer<typeof PathwayCompileBody>;

export const ParticipantCreateBody = z
  .object({
    user_id: Uuid,
    role: PathwayRole.default('viewer'),
  })
  .meta({ id: 'ParticipantCreateBody' });
export type ParticipantCreateBody = z.infer<typeof ParticipantCreateBody>;

export const ParticipantUpdateBody = z.object({ role: PathwayRole }).meta({ id: 'ParticipantUpdateBody' });

export const CheckRoleQuery = z.object({ user_id: Uuid, role: PathwayRole }).meta({ id: 'PathwayCheckRoleQuery' });

// ---------------------------------------------------------------- responses

export const Pathway = z
  .object({
    id: z.string(),
    workspace_id: z.string(),
    brain_id: z.string(),
    name: z.string(),
    slug: z.string().meta({
      description:
        'the name as a slug (lowercase, accents folded, other characters as -): execute and the OpenAI-compatible `pathway:<slug>` take it in place of the id',
    }),
    description: z.string(),
    pathway_graph: JsonObject,
    pathway_data: JsonObject.nullable(),
    is_active: z.boolean(),
    latest_version: z.number().int().meta({ description: 'current tip' }),
    version: z.number().int().meta({ description: 'version of the graph shown (the tip on pathway reads)' }),
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Pathway' });
export const PathwayList = z
  .object({
    pathways: z.array(Pathway),
    total: PageTotal,
    limit: z.number(),
    offset: z.number(),
    ...pageFields,
  })
  .meta({ id: 'PathwayList' });

export const PathwayVersionSummary = z
  .object({
    version: z.number().int(),
    created_at: z.string(),
    created_by: z.string().nullable(),
    note: z.string().nullable(),
    node_count: z.number().int(),
    saved_by: z
      .string()
      .nullable()
      .meta({ description: "who saved this version's graph: its secrets and connections are checked against them" }),
    saved_by_admin: z
      .boolean()
      .meta({ description: 'the saver was a workspace admin (false for versions saved before savers were recorded)' }),
  })
  .meta({ id: 'PathwayVersionSummary' });
export const PathwayVersionList = z
  .object({
    pathway_id: z.string(),
    latest_version: z.number().int(),
    versions: z.array(PathwayVersionSummary).meta({ description: 'newest first' }),
  })
  .meta({ id: 'PathwayVersionList' });
export const PathwayVersion = PathwayVersionSummary.extend({
  pathway_id: z.string(),
  latest_version: z.number().int(),
  name: z.string(),
  description: z.string(),
  pathway_graph: JsonObject,
}).meta({ id: 'PathwayVersion' });

export const PathwayValidation = z
  .object({
    valid: z.boolean(),
    errors: z.array(z.string()).optional(),
    warnings: z.array(z.string()).optional(),
  })
  .meta({ id: 'PathwayValidation' });
export const PathwayCompilation = z
  .object({
    compiled: CompiledGraph,
    preview: z.object({ input: JsonObject }).optional(),
    errors: z.array(z.string()).optional(),
    warnings: z.array(z.string()).optional(),
  })
  .meta({ id: 'PathwayCompilation' });

export const Participant = z
  .object({
    id: z.string(),
    pathway_id: z.string(),
    user_id: z.string(),
    role: PathwayRole,
    added_by: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'PathwayParticipant' });
export const CheckRoleResult = z
  .object({
    user_id: z.string(),
    role: PathwayRole.nullable(),
    required_role: PathwayRole,
    allowed: z.boolean(),
  })
  .meta({ id: 'PathwayCheckRole' });
