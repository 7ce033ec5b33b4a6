import { z } from 'zod';
import { QueryBool, SortDirection, Uuid, paging, PageTotal, pageFields } from '../kernel/schemas.js';
import { NeuronConfig } from './config-schemas.js';

/** brain (default): one brain; workspace: every brain of the workspace; core: curated platform neurons. */
export const NeuronScope = z.enum(['brain', 'workspace', 'core']);
export type NeuronScope = z.infer<typeof NeuronScope>;

/** A version number in a path or query: a positive integer, anything else is a 400. */
const VersionNumber = z
  .string()
  .regex(/^[1-9]\d{0,8}$/, 'version must be a positive integer')
  .transform(Number);

/** `:id` of the vertical routes: a UUID, or a neuron name/slug (resolved in the caller's brain). */
export const NeuronRefParams = z.object({
  id: z.string().min(1).max(200).meta({ description: 'neuron UUID, or its name or slug' }),
});
export const NeuronVersionParams = NeuronRefParams.extend({ version: VersionNumber });
/** Catalog routes address a neuron by UUID only (no slug resolution). */
export const NeuronResourceParams = z.object({ resource_id: Uuid });
export const NeuronResourceVersionParams = NeuronResourceParams.extend({ version: VersionNumber });

export const NeuronGetQuery = z
  .object({
    version: VersionNumber.optional().meta({
      description: 'return the body of this stored version instead of the head',
    }),
  })
  .meta({ id: 'NeuronGetQuery' });
export type NeuronGetQuery = z.infer<typeof NeuronGetQuery>;

export const NeuronListQuery = z
  .object({
    search: z.string().max(200).optional().meta({ description: 'substring of name or description (case-insensitive)' }),
    ...paging(20),
    sortBy: z.enum(['created_at', 'updated_at', 'name']).default('created_at'),
    sortDirection: SortDirection.default('desc'),
  })
  .meta({ id: 'NeuronListQuery' });
export type NeuronListQuery = z.infer<typeof NeuronListQuery>;

export const NeuronCatalogListQuery = NeuronListQuery.extend({
  include_deleted: QueryBool.optional().meta({ description: 'also list soft-deleted neurons' }),
}).meta({ id: 'NeuronCatalogListQuery' });
export type NeuronCatalogListQuery = z.infer<typeof NeuronCatalogListQuery>;

/**
 * neuron_config as a client sends it: engagement_resource_id is refused (it must never be
 * passed), then NeuronConfig strips every field it does not know.
 */
const NeuronConfigInput = z
  .record(z.string(), z.unknown())
  .refine((o) => !Object.hasOwn(o, 'engagement_resource_id'), {
    message: 'engagement_resource_id must never be passed in neuron_config',
  })
  .pipe(NeuronConfig)
  .meta({
    description:
      'system_prompt, resource_ids, vault_path, sub_neuron_ids, model, temperature, max_tokens, tools, neuron_type; other fields are stripped',
  });

const NeuronName = z.string().min(1).max(200).meta({
  description: 'normalized to a slug: lowercase, runs of other characters become "-", at most 100 characters',
});

export const NeuronCreateBody = z
  .object({
    name: NeuronName,
    brain_id: Uuid.optional().meta({ description: 'required unless X-Brain-Id is sent; the body wins' }),
    description: z.string().max(5000).default(''),
    neuron_config: NeuronConfigInput.optional(),
    is_active: z.boolean().default(true),
    scope: NeuronScope.default('brain').meta({ description: 'workspace needs workspace_admin, core needs core_admin' }),
  })
  .meta({ id: 'NeuronCreateBody' });
export type NeuronCreateBody = z.infer<typeof NeuronCreateBody>;

export const NeuronUpdateBody = z
  .object({
    name: NeuronName.optional(),
    description: z.string().max(5000).optional(),
    neuron_config: NeuronConfigInput.optional().meta({ description: 'replaces the whole config' }),
    is_active: z.boolean().optional(),
    scope: NeuronScope.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'set at least one of name, description, neuron_config, is_active, scope',
  })
  .meta({ id: 'NeuronUpdateBody' });
export type NeuronUpdateBody = z.infer<typeof NeuronUpdateBody>;

export const Neuron = z
  .object({
    id: z.string(),
    workspace_id: z.string(),
    brain_id: z.string(),
    name: z.string(),
    description: z.string(),
    neuron_config: NeuronConfig,
    is_active: z.boolean(),
    scope: NeuronScope,
    version: z
      .number()
      .int()
      .meta({ description: 'the version this body comes from (the head unless ?version= was sent)' }),
    latest_version: z.number().int(),
    attached: z.boolean().nullable().meta({
      description:
        'brain attachment: true when the neuron belongs to the X-Brain-Id brain, false when visible there through workspace or core scope, null without a brain',
    }),
    redacted: z
      .boolean()
      .meta({ description: "true when a core neuron's system_prompt was hidden from a caller without core_admin" }),
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    deleted_at: z.string().nullable(),
  })
  .meta({ id: 'Neuron' });
export const NeuronList = z
  .object({ neurons: z.array(Neuron), total: PageTotal, limit: z.number(), offset: z.number(), ...pageFields })
  .meta({ id: 'NeuronList' });

export const NeuronVersionSummary = z
  .object({
    version: z.number().int(),
    created_at: z.string(),
    name: z.string(),
    is_active: z.boolean(),
    created_by: z.string().nullable(),
    note: z.string().nullable(),
  })
  .meta({ id: 'NeuronVersionSummary' });
export const NeuronVersionList = z
  .object({ neuron_id: z.string(), latest_version: z.number().int(), versions: z.array(NeuronVersionSummary) })
  .meta({ id: 'NeuronVersionList' });

export const NeuronVersion = z
  .object({
    neuron_id: z.string(),
    version: z.number().int(),
    created_at: z.string(),
    created_by: z.string().nullable(),
    note: z.string().nullable(),
    redacted: z.boolean(),
    snapshot: z.object({
      id: z.string(),
      name: z.string(),
      description: z.string(),
      brain_id: z.string(),
      neuron_config: NeuronConfig,
      is_active: z.boolean(),
      scope: NeuronScope,
    }),
  })
  .meta({ id: 'NeuronVersion' });
