import type { z } from 'zod';
import type { WebhookDeliveryDoc, WebhookEndpointRecord as EndpointRecord } from '../../src/webhooks/index.js';
import { SuccessBody } from '../../src/kernel/schemas.js';
import {
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookDeliveryParams,
  WebhookEndpoint,
  WebhookEndpointCreateBody,
  WebhookEndpointList,
  WebhookEndpointParams,
  WebhookEndpointUpdateBody,
  WebhookEndpointWithSecret,
  WebhookListQuery,
} from '../../src/webhooks/index.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ webhooks: s.webhooks }));

const tags = ['webhooks'];
const admin = ['workspace_admin' as const];

const presentEndpoint = (e: EndpointRecord): z.input<typeof WebhookEndpoint> => ({
  id: e._id,
  url: e.url,
  events: e.events,
  description: e.description,
  enabled: e.enabled,
  previous_secret_expires_at:
    e.secretExpiries.filter((x): x is Date => x !== null && x.getTime() > Date.now()).map((x) => x.toISOString())[0] ??
    null,
  created_by: e.createdBy,
  created_at: e.createdAt.toISOString(),
  updated_at: e.updatedAt.toISOString(),
});

const presentDelivery = (d: WebhookDeliveryDoc): z.input<typeof WebhookDelivery> => ({
  id: d._id,
  endpoint_id: d.endpointId,
  event: d.event,
  status: d.status,
  payload: JSON.parse(d.body) as Record<string, unknown>,
  replay_of: d.replayOf,
  failed_reason: d.failedReason,
  attempts: d.attempts.map((a) => ({
    attempt: a.attempt,
    at: a.at.toISOString(),
    status_code: a.statusCode,
    error: a.error,
    duration_ms: a.durationMs,
  })),
  created_at: d.createdAt.toISOString(),
  finished_at: d.finishedAt?.toISOString() ?? null,
});

/**
 * Signed webhooks (docs/webhooks.md): endpoints that receive job and intervention events, signed
 * per Standard Webhooks. Admins only; a secret is shown once, when it is made.
 */
export default [
  route({
    method: 'post',
    path: '/v1/webhook-endpoints',
    summary: 'Add a webhook endpoint',
    status: 201,
    roles: admin,
    body: WebhookEndpointCreateBody,
    response: WebhookEndpointWithSecret,
    tags,
    description: 'Adds an endpoint subscribed to events; the answer shows its signing secret, this once',
    examples: {
      request: { url: 'https://hooks.example.com/cortex', events: ['job.completed', 'job.failed'] },
    },
    handler: async ({ body, scope, services }) => {
      const { endpoint, secret } = await services.webhooks.create(scope, body);
      return { ...presentEndpoint(endpoint), secret };
    },
  }),
  route({
    method: 'get',
    path: '/v1/webhook-endpoints',
    summary: 'List webhook endpoints',
    roles: admin,
    query: WebhookListQuery,
    response: WebhookEndpointList,
    tags,
    description: "The workspace's webhook endpoints, oldest first (never their secrets)",
    handler: async ({ query, scope, services }) => {
      const p = await services.webhooks.list(scope, query);
      return { webhook_endpoints: p.items.map(presentEndpoint), ...presentPage(p) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/webhook-endpoints/:id',
    summary: 'Read a webhook endpoint',
    roles: admin,
    params: WebhookEndpointParams,
    response: WebhookEndpoint,
    tags,
    handler: async ({ params, scope, services }) => presentEndpoint(await services.webhooks.get(scope, params.id)),
  }),
  route({
    method: 'patch',
    path: '/v1/webhook-endpoints/:id',
    summary: 'Change a webhook endpoint',
    roles: admin,
    params: WebhookEndpointParams,
    body: WebhookEndpointUpdateBody,
    response: WebhookEndpoint,
    tags,
    description: 'Changes the URL, events, description or enabled (events from then on follow the change)',
    handler: async ({ params, body, scope, services }) =>
      presentEndpoint(await services.webhooks.update(scope, params.id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/webhook-endpoints/:id',
    summary: 'Remove a webhook endpoint',
    roles: admin,
    params: WebhookEndpointParams,
    response: SuccessBody,
    tags,
    description: 'Removes the endpoint and its delivery history; deliveries still being retried stop',
    handler: async ({ params, scope, services }) => {
      await services.webhooks.remove(scope, params.id);
      return { success: true as const };
    },
  }),
  route({
    method: 'post',
    path: '/v1/webhook-endpoints/:id/rotate-secret',
    summary: "Rotate a webhook endpoint's signing secret",
    roles: admin,
    params: WebhookEndpointParams,
    response: WebhookEndpointWithSecret,
    tags,
    description:
      'A new signing secret, shown this once; the previous one keeps signing for 24 h (each delivery carries both signatures)',
    handler: async ({ params, scope, services }) => {
      const { endpoint, secret } = await services.webhooks.rotateSecret(scope, params.id);
      return { ...presentEndpoint(endpoint), secret };
    },
  }),
  route({
    method: 'get',
    path: '/v1/webhook-endpoints/:id/deliveries',
    summary: "List a webhook endpoint's deliveries",
    roles: admin,
    params: WebhookEndpointParams,
    query: WebhookListQuery,
    response: WebhookDeliveryList,
    tags,
    description:
      "The endpoint's deliveries, newest first, each with every attempt (time, status code or error, duration)",
    handler: async ({ params, query, scope, services }) => {
      const p = await services.webhooks.deliveries(scope, params.id, query);
      return { deliveries: p.items.map(presentDelivery), ...presentPage(p) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/webhook-endpoints/:id/deliveries/:delivery_id/replay',
    summary: 'Send a webhook delivery again',
    status: 201,
    roles: admin,
    params: WebhookDeliveryParams,
    response: WebhookDelivery,
    tags,
    description: 'Sends the same event again as a new delivery (its own id, attempts and retries)',
    handler: async ({ params, scope, services }) =>
      presentDelivery(await services.webhooks.replay(scope, params.id, params.delivery_id)),
  }),
];
