import { z } from 'zod';
import { PageTotal, Uuid, pageFields, paging } from '../kernel/schemas.js';

export const BudgetScope = z.enum(['workspace', 'receptor', 'neuron', 'share_token']).meta({
  description: 'what the budget caps: the workspace, or the calls made for one receptor, neuron or share link',
});
export const BudgetMeasure = z.enum(['tokens', 'usd']);
export const BudgetPeriod = z
  .enum(['day', 'month', 'total'])
  .meta({ description: 'UTC calendar day or month; total never resets' });
export const BudgetPolicy = z.enum(['pause', 'fail']).meta({
  description:
    'pause: the run waits for an admin to approve (an intervention); fail: the run fails with BUDGET_EXCEEDED',
});

// The same names as types: what a stored budget holds too (src/usage/budgets.mongo.ts).
export type BudgetScope = z.infer<typeof BudgetScope>;
export type BudgetMeasure = z.infer<typeof BudgetMeasure>;
export type BudgetPeriod = z.infer<typeof BudgetPeriod>;
export type BudgetPolicy = z.infer<typeof BudgetPolicy>;

/** Largest limit accepted: 10^12 tokens or USD (a cap beyond that is no cap). */
const MAX_LIMIT = 1e12;
const Limit = z.number().positive().max(MAX_LIMIT).meta({ description: 'tokens (a whole number) or USD' });
const Name = z.string().trim().min(1).max(200);

const tokensAreWhole = (b: { measure?: string; limit?: number }, ctx: z.RefinementCtx) => {
  if (b.measure === 'tokens' && b.limit !== undefined && !Number.isInteger(b.limit))
    ctx.addIssue({ code: 'custom', path: ['limit'], message: 'a token limit must be a whole number' });
};

export const BudgetCreateBody = z
  .object({
    scope: BudgetScope,
    target_id: Uuid.optional().meta({
      description: 'the receptor, neuron or share link (its id, as the share view shows it); omitted for the workspace',
    }),
    measure: BudgetMeasure,
    period: BudgetPeriod,
    limit: Limit,
    policy: BudgetPolicy.default('pause'),
    name: Name.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    tokensAreWhole(b, ctx);
    if (b.scope === 'workspace' && b.target_id)
      ctx.addIssue({ code: 'custom', path: ['target_id'], message: 'a workspace budget has no target_id' });
    if (b.scope !== 'workspace' && !b.target_id)
      ctx.addIssue({ code: 'custom', path: ['target_id'], message: `a ${b.scope} budget needs target_id` });
  })
  .meta({ id: 'BudgetCreateBody' });
export type BudgetCreateBody = z.infer<typeof BudgetCreateBody>;

/** Changes the limit, policy or name; target, measure and period are the budget's identity (create another). */
export const BudgetUpdateBody = z
  .object({ limit: Limit.optional(), policy: BudgetPolicy.optional(), name: Name.nullable().optional() })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'send at least one of limit, policy, name')
  .meta({ id: 'BudgetUpdateBody' });
export type BudgetUpdateBody = z.infer<typeof BudgetUpdateBody>;

export const BudgetListQuery = z
  .object({
    scope: BudgetScope.optional(),
    target_id: Uuid.optional(),
    ...paging(100, 1000),
  })
  .meta({ id: 'BudgetListQuery' });
export type BudgetListQuery = z.infer<typeof BudgetListQuery>;

export const Budget = z
  .object({
    id: z.string(),
    scope: BudgetScope,
    target_id: z.string().nullable(),
    measure: BudgetMeasure,
    period: BudgetPeriod,
    limit: z.number(),
    policy: BudgetPolicy,
    name: z.string().nullable(),
    spent: z
      .number()
      .meta({ description: "spent in the current period, in the budget's measure, summed from the usage ledger" }),
    remaining: z.number().meta({ description: 'limit − spent, never below 0' }),
    exceeded: z.boolean().meta({ description: 'spent has reached the limit' }),
    period_start: z.string().nullable().meta({ description: 'start of the current period (null for total)' }),
    period_end: z.string().nullable().meta({ description: 'when the current period ends (null for total)' }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Budget' });

export const BudgetList = z
  .object({ budgets: z.array(Budget), total: PageTotal, limit: z.number(), offset: z.number(), ...pageFields })
  .meta({ id: 'BudgetList' });
