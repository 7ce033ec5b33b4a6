/**
 * Signed webhooks (docs/webhooks.md): the area's only door. Endpoints and their deliveries, the
 * outbox of recorded events and its follower, Standard Webhooks signing. Other areas, routes,
 * activities and workflows import from here.
 */
// The stored shapes; `…Record` where the wire schema (schemas.ts) has the plain name.
export type {
  WebhookDeliveryDoc,
  WebhookEndpoint as WebhookEndpointRecord,
  WebhookEndpointDoc,
  WebhookEventRecord,
} from './model.js';
export type { WebhookStore as WebhookRepo } from './store.js';
export { createWebhookRepo, webhookIndexes } from './store.mongo.js';
export { createWebhookService, endEvents, type WebhookDeliveryInput } from './service.js';
export * from './schemas.js';
