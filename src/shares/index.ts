/**
 * Share links (docs/shares.md): the area's only door. Share tokens of a receptor, their limits
 * and use (`model.ts`, the contract `store.ts`, the adapter `store.mongo.ts`), the service that
 * issues and checks them, and the request shapes (`schemas.ts`). Routes, the composition root and
 * other areas import from here.
 */
export type { ShareTokenDoc, ShareUploadDoc } from './model.js';
export type { ShareStore as ShareRepo } from './store.js';
export { createShareRepo, shareIndexes } from './store.mongo.js';
export * from './schemas.js';
export * from './service.js';
