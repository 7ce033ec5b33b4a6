import type { z } from 'zod';
import type { BudgetDoc } from '../../src/usage/index.js';
import type { Budget } from '../../src/usage/index.js';

/** Wire shape of a budget with its spending in the current period (every field listed). */
export function presentBudget(v: {
  doc: BudgetDoc;
  spent: number;
  remaining: number;
  exceeded: boolean;
  period: { start: Date | null; end: Date | null };
}): z.input<typeof Budget> {
  const b = v.doc;
  return {
    id: b._id,
    scope: b.scope,
    target_id: b.targetId,
    measure: b.measure,
    period: b.period,
    limit: b.limit,
    policy: b.policy,
    name: b.name,
    spent: v.spent,
    remaining: v.remaining,
    exceeded: v.exceeded,
    period_start: v.period.start?.toISOString() ?? null,
    period_end: v.period.end?.toISOString() ?? null,
    created_at: b.createdAt.toISOString(),
    updated_at: b.updatedAt.toISOString(),
  };
}
