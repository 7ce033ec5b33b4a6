import { z } from 'zod';
import {
  IsoDate,
  JsonObject,
  Uuid,
  paging,
  strictBody,
  PageTotal,
  pageFields,
  optionalPageFields,
} from '../kernel/schemas.js';

export const TraceIdParams = z.object({
  id: Uuid.meta({ description: "the trace's trace_id, or the id a trace list shows" }),
});

export const TraceListQuery = z
  .object({
    brain_id: Uuid.optional(),
    receptor_id: Uuid.optional(),
    user_id: Uuid.optional(),
    neuron_id: Uuid.optional().meta({ description: 'needs brain scope (X-Brain-Id)' }),
    search: z.string().max(200).optional().meta({ description: 'substring of trace_id or metadata.title' }),
    created_after: IsoDate.optional(),
    created_before: IsoDate.optional(),
    trace_type: z
      .enum(['thread', 'system', 'all'])
      .default('thread')
      .meta({ description: 'system traces are hidden by default' }),
    ...paging(20),
    sort: z.enum(['created_at', 'updated_at', 'message_count']).default('updated_at'),
    order: z.enum(['asc', 'desc']).default('desc'),
  })
  .meta({ id: 'TraceListQuery' });
export type TraceListQuery = z.infer<typeof TraceListQuery>;

export const MessagesQuery = z.object({ limit: z.coerce.number().int().min(1).max(10_000).optional() });

export const MessageCreateBody = z
  .object({
    content: z.string().min(1, 'content is required').max(200_000),
    metadata: JsonObject.optional(),
    memory_ids: z.array(Uuid).max(100).optional(),
  })
  .meta({ id: 'MessageCreateBody' });
export type MessageCreateBody = z.infer<typeof MessageCreateBody>;

export const TraceForkBody = strictBody(
  {
    at_engram_id: z
      .string()
      .min(1, 'at_engram_id is required')
      .max(200)
      .meta({ description: "the last engram the fork copies (one of the trace's messages)" }),
  },
  'a fork takes only "at_engram_id", e.g. {"at_engram_id": "<engram id>"}',
).meta({ id: 'TraceForkBody' });
export type TraceForkBody = z.infer<typeof TraceForkBody>;

export const TracePatchBody = z.object({ title: z.string().trim().min(1).max(300) }).meta({ id: 'TracePatchBody' });

const CostSummary = z.object({
  total_cost_usd: z.number(),
  total_tokens: z.number(),
  input_tokens: z.number(),
  output_tokens: z.number(),
});
export const Trace = z
  .object({
    id: z.string(),
    trace_id: z.string(),
    tenant_id: z.string(),
    user_id: z.string().nullable(),
    api_key_id: z.string().nullable(),
    synapse_id: z.string().nullable(),
    brain_id: z.string().nullable(),
    neuron_id: z.string().nullable(),
    trace_type: z.enum(['thread', 'system']),
    created_at: z.string(),
    updated_at: z.string(),
    message_count: z.number(),
    cost_summary: CostSummary,
    title: z.string().optional(),
    metadata: JsonObject,
    forked_from: z
      .object({ trace_id: z.string(), engram_id: z.string() })
      .optional()
      .meta({ description: 'set on a fork (POST /v1/traces/:id/fork): the trace and engram it was copied up to' }),
  })
  .meta({ id: 'Trace' });
export const Engram = z
  .object({
    id: z.string(),
    workspace_id: z.string(),
    created_at: z.string(),
    content: z.object({ type: z.string(), content: z.string() }),
    content_hash: z.string(),
    metadata: JsonObject,
    source_type: z.string(),
    source_id: z.string().nullable(),
    target_type: z.string().nullable(),
    target_id: z.string().nullable(),
    trace_id: z.string(),
    trace_type: z.enum(['thread', 'system']),
    memory_ids: z.array(z.string()),
  })
  .meta({ id: 'Engram' });
export const TraceList = z.object({
  traces: z.array(Trace),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...optionalPageFields,
  has_more: pageFields.has_more,
});
