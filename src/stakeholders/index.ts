/**
 * Stakeholder maps (docs/stakeholder-maps.md): the area's only door. A brain's map and its
 * versions (the stored shapes in `model.ts`, the store contract StakeholderMapStore in `store.ts`,
 * its adapter `store.mongo.ts` with the graph rows in `graphs.mongo.ts`), the graph model and its patch
 * ops (`graph.ts`, `dsl.ts`), analysis, extraction from meetings and knowledge (`extraction.ts`,
 * `extraction-service.ts`), editing, the service and the request shapes (`schemas.ts`). Routes,
 * activities, the composition root and other areas import from here.
 */
export { createStakeholderMapRepo, stakeholderMapIndexes } from './store.mongo.js';
export type { StakeholderMap, StakeholderMapDoc, StakeholderVersionDoc } from './model.js';
export * from './schemas.js';
export * from './service.js';
export type { Graph } from './graph.js';
