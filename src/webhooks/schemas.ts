import { z } from 'zod';
import { WEBHOOK_EVENTS } from './model.js';
import { PageTotal, Uuid, pageFields, paging } from '../kernel/schemas.js';

const WebhookEventName = z.enum(WEBHOOK_EVENTS).meta({ id: 'WebhookEvent' });

const Url = z
  .url({ protocol: /^https?$/, message: 'must be an http or https URL' })
  .max(2048)
  .meta({ description: 'where deliveries are POSTed; the outbound guard checks the address at each send' });
const Events = z
  .array(WebhookEventName)
  .min(1, 'subscribe to at least one event')
  .max(WEBHOOK_EVENTS.length * 2);
const Description = z.string().trim().max(500).nullable();

export const WebhookEndpointParams = z.object({ id: Uuid });
export const WebhookDeliveryParams = z.object({ id: Uuid, delivery_id: Uuid });

export const WebhookEndpointCreateBody = z
  .strictObject({
    url: Url,
    events: Events,
    description: Description.optional(),
    enabled: z.boolean().default(true),
  })
  .meta({ id: 'WebhookEndpointCreateBody' });
export type WebhookEndpointCreateBody = z.infer<typeof WebhookEndpointCreateBody>;

export const WebhookEndpointUpdateBody = z
  .strictObject({
    url: Url.optional(),
    events: Events.optional(),
    description: Description.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, 'send at least one of url, events, description, enabled')
  .meta({ id: 'WebhookEndpointUpdateBody' });
export type WebhookEndpointUpdateBody = z.infer<typeof WebhookEndpointUpdateBody>;

export const WebhookListQuery = z.object({ ...paging(50) }).meta({ id: 'WebhookListQuery' });

/** An endpoint as routes show it: never its secret (shown once, by create and rotate-secret). */
export const WebhookEndpoint = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(WebhookEventName),
    description: z.string().nullable(),
    enabled: z.boolean(),
    previous_secret_expires_at: z.string().nullable().meta({
      description: 'after a rotation: until when the previous secret still signs deliveries (null: only one secret)',
    }),
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'WebhookEndpoint' });

export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().meta({
    description: 'the signing secret (`whsec_` + base64): shown this once, never again; store it now',
  }),
}).meta({ id: 'WebhookEndpointWithSecret' });

export const WebhookEndpointList = z
  .object({
    webhook_endpoints: z.array(WebhookEndpoint),
    total: PageTotal,
    limit: z.number(),
    offset: z.number(),
    ...pageFields,
  })
  .meta({ id: 'WebhookEndpointList' });

const WebhookAttempt = z
  .object({
    attempt: z.number(),
    at: z.string(),
    status_code: z.number().nullable().meta({ description: "the endpoint's HTTP status (null: no answer)" }),
    error: z.string().nullable().meta({ description: 'why no answer came (a refused address, a timeout, a reset)' }),
    duration_ms: z.number(),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDelivery = z
  .object({
    id: z.string().meta({ description: 'also the `webhook-id` header of every attempt of this delivery' }),
    endpoint_id: z.string(),
    event: WebhookEventName,
    status: z.enum(['pending', 'delivered', 'failed']),
    payload: z.record(z.string(), z.unknown()).meta({ description: 'the body sent: `{ type, timestamp, data }`' }),
    replay_of: z.string().nullable(),
    failed_reason: z.string().nullable(),
    attempts: z.array(WebhookAttempt),
    created_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

export const WebhookDeliveryList = z
  .object({
    deliveries: z.array(WebhookDelivery),
    total: PageTotal,
    limit: z.number(),
    offset: z.number(),
    ...pageFields,
  })
  .meta({ id: 'WebhookDeliveryList' });
