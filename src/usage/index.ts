/**
 * Usage (docs/usage.md): the area's only door. The ledger of every billed call (its rows and
 * rollups `model.ts` and `groups.ts`, the contracts `store.ts`, the adapter `store.mongo.ts`) and
 * the counters derived from it (`counters.ts`, rebuilt by `reconciler.ts`), budgets and their
 * pauses (`budgets.ts`, `budgets.mongo.ts`), and the service that answers usage queries. Routes,
 * activities, the composition root and other areas import from here.
 */
export { budgetKey, HOUR_MS, rollupId, type BudgetDoc, type UsageCumulativeDoc, type UsageRollupDoc } from './model.js';
export type { BudgetStore as BudgetRepo, UsageStore as UsageRepo } from './store.js';
export { createUsageRepo, usageIndexes } from './store.mongo.js';
export { budgetIndexes, createBudgetRepo } from './budgets.mongo.js';
export * from './counters.js';
export * from './groups.js';
export * from './schemas.js';
export * from './budget-schemas.js';
export * from './service.js';
export * from './budgets.js';
export * from './reconciler.js';
