import { z } from 'zod';
import { JsonObject, QueryBool, Uuid, paging } from '../kernel/schemas.js';

export const InterventionListQuery = z
  .object({
    status: z.enum(['pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled']).optional(),
    job_id: Uuid.optional(),
    trace_id: Uuid.optional(),
    ...paging(50),
    brain_scope: z.enum(['all', 'brain']).optional().meta({ description: 'all: workspace-wide' }),
    brain_id: Uuid.optional().meta({ description: 'overrides X-Brain-Id' }),
    summary: QueryBool.optional().meta({
      description:
        'counts per status instead of a page, each counted up to 1,000 (counts_exact false when one reached it)',
    }),
  })
  .meta({ id: 'InterventionListQuery' });
export type InterventionListQuery = z.infer<typeof InterventionListQuery>;

export const RespondBody = z
  .object({
    action: z.string().trim().min(1).max(100),
    comment: z.string().max(10_000).optional(),
    fields: JsonObject.optional(),
    arguments: JsonObject.optional().meta({
      description: 'a tool_call intervention answered with action edit: the arguments the tool runs with',
    }),
  })
  .meta({ id: 'InterventionRespondBody' });
export type RespondBody = z.infer<typeof RespondBody>;

export const TokenParams = z.object({ token: z.string().min(16).max(200) });

export const Delivery = z.object({
  id: z.string(),
  channel: z.string(),
  status: z.string(),
  token: z.string().optional(),
  url: z.string().optional(),
  page_url: z.string().optional().meta({ description: 'the approval page for a person' }),
  created_at: z.string(),
  responded_at: z.string().nullable(),
});
export const Intervention = z
  .object({
    id: z.string(),
    workspace_id: z.string(),
    brain_id: z.string().nullable(),
    job_id: z.string(),
    trace_id: z.string().nullable(),
    pathway_id: z.string().nullable(),
    node_index: z.number(),
    kind: z.string(),
    title: z.string(),
    prompt: z.string(),
    options: z.array(z.string()),
    status: z.string(),
    action: z.string().nullable(),
    comment: z.string().nullable(),
    fields: JsonObject.nullable(),
    payload: JsonObject.optional().meta({
      description:
        'what the person decides on (a tool_call: { tool, arguments (secrets redacted), turn, call_id }); absent on other kinds',
    }),
    responded_by: z.string().nullable(),
    responded_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    deliveries: z.array(Delivery),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Intervention' });
