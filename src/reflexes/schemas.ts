import { z } from 'zod';
import { JsonObject, SortDirection, Uuid, paging, PageTotal, pageFields } from '../kernel/schemas.js';

/** sensory: provides input; effector: executes actions. */
const ReflexType = z.enum(['sensory', 'effector']);
const ReflexScope = z.enum(['core', 'workspace', 'brain']);

const ReflexToolSet = z
  .object({
    integration_id: z.string().trim().min(1).max(200),
    tools: z.array(z.string().trim().min(1).max(200)).max(200),
  })
  .meta({ id: 'ReflexToolSet' });

const implementation =
  'a reflex must define integration-backed tools, internal behavior (metadata.handler) or a server-backed implementation (metadata.server_url)';

export const ReflexIdParams = z.object({ id: Uuid });

export const ReflexListQuery = z
  .object({
    type: ReflexType.optional(),
    search: z.string().max(200).optional().meta({ description: 'substring of name or description (case-insensitive)' }),
    ...paging(20),
    sortBy: z.enum(['created_at', 'updated_at', 'name']).default('created_at'),
    sortDirection: SortDirection.default('desc'),
  })
  .meta({ id: 'ReflexListQuery' });
export type ReflexListQuery = z.infer<typeof ReflexListQuery>;

export const ReflexCreateBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    type: ReflexType,
    description: z.string().max(5000).default(''),
    tools: z.array(ReflexToolSet).max(100).default([]).meta({ description: implementation }),
    metadata: JsonObject.default({}).meta({
      description:
        'handler: a built-in internal tool name (calculator, current_time); server_url: an http(s) URL; anything else is kept as sent',
    }),
    is_active: z.boolean().default(true),
    scope: ReflexScope.meta({
      description: 'brain needs brain_id or X-Brain-Id; workspace needs workspace_admin, core needs core_admin',
    }),
    brain_id: Uuid.optional(),
  })
  .meta({ id: 'ReflexCreateBody' });
export type ReflexCreateBody = z.infer<typeof ReflexCreateBody>;

export const ReflexUpdateBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    description: z.string().max(5000).optional(),
    tools: z.array(ReflexToolSet).max(100).optional(),
    metadata: JsonObject.optional().meta({ description: 'replaces the whole metadata object' }),
    is_active: z.boolean().optional(),
    scope: z.enum(['workspace', 'core']).optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'set at least one of name, description, tools, metadata, is_active, scope',
  })
  .meta({ id: 'ReflexUpdateBody' });
export type ReflexUpdateBody = z.infer<typeof ReflexUpdateBody>;

export const Reflex = z
  .object({
    id: z.string(),
    workspace_id: z.string(),
    brain_id: z.string().nullable(),
    name: z.string(),
    type: ReflexType,
    description: z.string(),
    tools: z.array(ReflexToolSet),
    metadata: JsonObject,
    is_active: z.boolean(),
    scope: ReflexScope,
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Reflex' });
export const ReflexList = z
  .object({ reflexes: z.array(Reflex), total: PageTotal, limit: z.number(), offset: z.number(), ...pageFields })
  .meta({ id: 'ReflexList' });

/** Neuron–reflex association routes. */
export const NeuronReflexParams = z.object({
  id: z.string().min(1).max(200).meta({ description: 'neuron UUID, or its name or slug' }),
  reflexId: Uuid,
});
export const NeuronReflexBody = z.object({ reflex_id: Uuid }).meta({ id: 'NeuronReflexBody' });
export const NeuronReflexSummary = z
  .object({ id: z.string(), name: z.string(), type: ReflexType, is_active: z.boolean(), created_at: z.string() })
  .meta({ id: 'NeuronReflexSummary' });
export const NeuronReflexAssignment = z
  .object({ neuron_id: z.string(), reflex_id: z.string(), created_at: z.string() })
  .meta({ id: 'NeuronReflexAssignment' });

/** GET /v1/reflexes/:id/tools: what the reflex offers the caller, listed as a run lists it (docs/tools.md). */
const ReflexDiscoveredTool = z
  .object({
    name: z.string(),
    description: z.string(),
    parameters: JsonObject.meta({ description: "the tool's arguments (a JSON schema)" }),
    kind: z.enum(['builtin', 'http', 'mcp']),
    integration_id: z
      .string()
      .nullable()
      .meta({ description: "the integration whose connected account's token a call sends" }),
  })
  .meta({ id: 'ReflexDiscoveredTool' });
export const ReflexToolList = z
  .object({
    reflex_id: z.string(),
    tools: z.array(ReflexDiscoveredTool),
    errors: z
      .array(z.string())
      .meta({ description: 'what could not be listed (a server down, an integration not configured)' }),
  })
  .meta({ id: 'ReflexToolList' });
