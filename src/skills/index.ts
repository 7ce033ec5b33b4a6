/**
 * Skills (docs/glossary.md, "Skill"): the area's only door. Skills and their versions
 * (`model.ts`, the contract `store.ts`, the adapter `store.mongo.ts`), the service and the request shapes (`schemas.ts`). Routes, the composition
 * root and other areas import from here.
 */
export { createSkillRepo, skillIndexes } from './store.mongo.js';
export type { SkillDoc } from './model.js';
export type { SkillStore as SkillRepo } from './store.js';
export * from './schemas.js';
export * from './service.js';
