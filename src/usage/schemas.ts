import { z } from 'zod';
import { Uuid } from '../kernel/schemas.js';

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
/**
 * An ISO 8601 calendar date or date-time, strictly: `Date.parse` alone also takes `1`, `March 7,
 * 2026` and `2026-02-30` (as 2 March), none of which a usage window should silently become.
 */
const UsageDate = z.string().refine((s) => {
  const m = ISO_8601.exec(s);
  if (!m || Number.isNaN(Date.parse(s))) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(Date.UTC(y, mo - 1, d));
  return day.getUTCMonth() === mo - 1 && day.getUTCDate() === d;
}, 'must be an ISO 8601 date (2026-01-31) or date-time (2026-01-31T12:00:00Z)');

/** The window and filter of a usage read; dates are ISO 8601 (a date or a date-time). */
export const UsageQuery = z
  .object({
    startDate: UsageDate.optional().meta({
      description: 'window start (inclusive), ISO 8601; a date alone starts at 00:00 UTC',
    }),
    endDate: UsageDate.optional().meta({
      description: 'window end (inclusive), ISO 8601; a date alone includes that whole UTC day',
    }),
    receptorId: Uuid.optional().meta({ description: 'only calls made for this receptor' }),
  })
  .meta({ id: 'UsageQuery' });
export type UsageQuery = z.infer<typeof UsageQuery>;

export const UsageWorkspaceParams = z.object({ workspace_id: Uuid });

export const UsageReceptorsQuery = UsageQuery.omit({ receptorId: true })
  .extend({
    sortBy: z.enum(['tokens', 'cost', 'invokeCount']).default('tokens'),
  })
  .meta({ id: 'UsageReceptorsQuery' });

const Spend = z.object({ tokens: z.number(), cost: z.number() });
const ResourceUsage = z.object({
  resourceId: z.string(),
  slug: z.string().nullable(),
  subtype: z.string(),
  tokens: z.number(),
  cost: z.number(),
  invokeCount: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  cachedInputTokens: z.number(),
});
const FacetIntegrity = Spend.extend({
  unattributedTokens: z
    .number()
    .optional()
    .meta({ description: 'tokens of calls that served no resource of this kind' }),
  unattributedCost: z.number().optional(),
  matchesTotals: z.boolean().meta({ description: 'attributed + unattributed equal the totals exactly' }),
});

/** Usage statistics (docs/usage.md): every figure is a sum over the same ledger rows. */
export const UsageStats = z
  .object({
    startDate: z.string().nullable(),
    endDate: z.string().nullable(),
    totalTokens: z.number(),
    totalCost: z.number().meta({ description: 'USD' }),
    inputTokens: z.number(),
    outputTokens: z.number(),
    cachedInputTokens: z.number(),
    calls: z.number().meta({ description: 'billed provider calls' }),
    usageByProvider: z.record(z.string(), Spend),
    usageByModel: z.record(
      z.string(),
      Spend.extend({
        priced: z.boolean().meta({ description: 'false: the model has no price; its cost counts as 0' }),
      }),
    ),
    usageByResource: z.object({
      receptor: z.record(z.string(), ResourceUsage),
      neuron: z.record(z.string(), ResourceUsage),
      pathway: z.record(z.string(), ResourceUsage),
    }),
    usageRollupIntegrity: z.object({
      totalTokens: z.number(),
      totalCost: z.number(),
      provider: FacetIntegrity,
      model: FacetIntegrity,
      receptor: FacetIntegrity,
      neuron: FacetIntegrity,
      pathway: FacetIntegrity,
      allFacetsMatchTotals: z.boolean(),
    }),
  })
  .meta({ id: 'UsageStats' });

export const ReceptorUsageRanking = z
  .object({
    workspaceId: z.string(),
    sortBy: z.enum(['tokens', 'cost', 'invokeCount']),
    receptors: z.array(
      z.object({
        receptorId: z.string(),
        receptorSlug: z.string().nullable(),
        receptorType: z.string(),
        tokens: z.number(),
        cost: z.number(),
        invokeCount: z.number(),
      }),
    ),
  })
  .meta({ id: 'ReceptorUsageRanking' });
