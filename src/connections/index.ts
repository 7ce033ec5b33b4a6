/**
 * Connections (docs/tools.md, "Connections (OAuth 2)"): the area's only door. A
 * workspace's integrations and the connections made through them (the model in `model.ts`, the
 * store contract in `store.ts`, its adapter `store.mongo.ts`), their OAuth flow and sealed tokens
 * (`service.ts`), and the request shapes (`schemas.ts`). Routes, the composition root and other
 * areas import from here.
 */
export type { ConnectionDoc, ConnectionRequestDoc, IntegrationDoc } from './model.js';
export type { ConnectionStore as ConnectionRepo } from './store.js';
export { connectionIndexes, createConnectionRepo } from './store.mongo.js';
export * from './schemas.js';
export * from './service.js';
