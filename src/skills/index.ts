/**
 * Skills (docs/glossary.md, "Skill"): the area's only door. Skills and their versions
 * (`store.mongo.ts`), the service and the request shapes (`schemas.ts`). Routes, the composition
 * root and other areas import from here.
 */
export * from './store.mongo.js';
export * from './schemas.js';
export * from './service.js';
