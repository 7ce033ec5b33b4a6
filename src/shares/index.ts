/**
 * Share links (docs/shares.md): the area's only door. Share tokens of a receptor, their limits
 * and use (`store.mongo.ts`), the service that issues and checks them, and the request shapes
 * (`schemas.ts`). Routes, the composition root and other areas import from here.
 */
export * from './store.mongo.js';
export * from './schemas.js';
export * from './service.js';
