/**
 * Search (docs/search.md): the area's only door. One index per deployment (embedded or Weaviate,
 * `home.ts`) fed from the store's resources (`sources.ts` over `store.mongo.ts`) and kept by the
 * indexer; the service answers search, list, grep, the resource tree and recollection search.
 * Routes, activities, the composition root and other areas import from here.
 */
export { createSearchService, SEARCH_TYPES, type SearchHit } from './service.js';
export { WORKSPACE_DELETED } from './indexer.js';
export { createSearchSources } from './store.mongo.js';
export { LISTABLE_TYPES, typeOf } from './query.js';
export type { SearchType } from './memory-index.js';
export * from './schemas.js';
