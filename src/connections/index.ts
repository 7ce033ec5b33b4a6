/**
 * Connections (docs/tools.md, "Connections (OAuth 2)"): the area's only door. A
 * workspace's integrations and the connections made through them, their OAuth flow and sealed
 * tokens (`store.mongo.ts`, `service.ts`), and the request shapes (`schemas.ts`). Routes, the
 * composition root and other areas import from here.
 */
export * from './store.mongo.js';
export * from './schemas.js';
export * from './service.js';
