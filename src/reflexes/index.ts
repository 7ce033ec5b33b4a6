/**
 * Reflexes (docs/tools.md): the area's only door. Reflexes (tool bundles) and their assignment to
 * neurons (the model in `model.ts`, the store contract in `store.ts`, its adapter `store.mongo.ts`),
 * the service (`service.ts`) and the request shapes (`schemas.ts`). Routes, the run engine, the
 * composition root and other areas import from here.
 */
// The stored shapes; `…Record` where the wire schema (schemas.ts) has the plain name.
export type { NeuronReflexDoc, Reflex as ReflexRecord, ReflexDoc } from './model.js';
export type { ReflexStore as ReflexRepo } from './store.js';
export { createReflexRepo, reflexIndexes } from './store.mongo.js';
export * from './schemas.js';
export { Reflex } from './schemas.js';
export * from './service.js';
