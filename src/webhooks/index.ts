/**
 * Signed webhooks (docs/webhooks.md): the area's only door. Endpoints and their deliveries, the
 * outbox of recorded events and its follower, Standard Webhooks signing. Other areas, routes,
 * activities and workflows import from here.
 */
export { WEBHOOK_EVENTS } from './model.js';
// The stored shapes; `…Record` where the wire schema (schemas.ts) has the plain name.
export type {
  WebhookAttempt as WebhookAttemptRecord,
  WebhookDeliveryDoc,
  WebhookDeliveryStatus,
  WebhookEndpoint as WebhookEndpointRecord,
  WebhookEndpointDoc,
  WebhookEvent,
  WebhookEventDoc,
  WebhookEventRecord,
  WebhookSecret,
} from './model.js';
export type { WebhookStore, WebhookStore as WebhookRepo } from './store.js';
export { createWebhookRepo, webhookIndexes } from './store.mongo.js';
export {
  createWebhookService,
  endEvents,
  SECRET_OVERLAP_MS,
  type NewWebhookEndpoint,
  type WebhookAttemptOutcome,
  type WebhookDeliveryInput,
  type WebhookService,
} from './service.js';
export type { OutboxSource } from './outbox.js';
export { newWebhookSecret, signWebhook, webhookHeaders, WEBHOOK_SECRET_PREFIX } from './signature.js';
export * from './schemas.js';
