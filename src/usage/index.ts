/**
 * Usage (docs/usage.md): the area's only door. The ledger of every billed call (`store.mongo.ts`)
 * and the counters derived from it (`counters.ts`, rebuilt by `reconciler.ts`), grouped reads
 * (`groups.ts`), budgets and their pauses (`budgets.ts`, `budgets.mongo.ts`), and the service that
 * answers usage queries. Routes, activities, the composition root and other areas import from here.
 */
export * from './store.mongo.js';
export * from './counters.js';
export * from './groups.js';
export { budgetIndexes, createBudgetRepo, type BudgetDoc } from './budgets.mongo.js';
export * from './schemas.js';
export * from './budget-schemas.js';
export * from './service.js';
export * from './budgets.js';
export * from './reconciler.js';
