/** The secrets area's door: what other areas, routes, activities and the worker may use. */
export { Secret, SecretList, SecretParams, SecretPutBody } from './schemas.js';
export { createSecretService } from './service.js';
export type { SecretService } from './service.js';
export { createSecretRepo, secretIndexes } from './store.mongo.js';
export type { SecretMeta } from './model.js';
