/**
 * Reflexes (docs/tools.md): the area's only door. Reflexes (tool bundles) and their assignment to
 * neurons (`store.mongo.ts`), the service (`service.ts`) and the request shapes (`schemas.ts`).
 * Routes, the run engine, the composition root and other areas import from here.
 */
export * from './store.mongo.js';
// The stored shapes; `…Record` where the wire schema (schemas.ts) has the plain name.
export type { Reflex as ReflexRecord } from './store.mongo.js';
export * from './schemas.js';
export { Reflex } from './schemas.js';
export * from './service.js';
