/** The tenancy area (docs/operations.md: Retention, Deleting a workspace, Workspace export and import). */
export { createTenancyService, RETENTION_SCHEDULE_ID, USAGE_ROWS_MIN_S, type TenancyService } from './service.js';
export { createTenancyStore, tenancyIndexes } from './store.mongo.js';
export type { TenancyStore } from './store.js';
export { ERASE_STEPS, RETENTION_KINDS, type EraseStep, type RetentionKind, type DeletionDoc } from './model.js';
export * from './schemas.js';
