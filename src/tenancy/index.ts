/** The tenancy area (docs/operations.md: Retention, Deleting a workspace, Workspace export and import). */
export { createTenancyService } from './service.js';
export { createTenancyStore, tenancyIndexes } from './store.mongo.js';
export { ERASE_STEPS, type DeletionDoc } from './model.js';
export * from './schemas.js';
