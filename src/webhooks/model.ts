/** The events an endpoint may subscribe to (docs/webhooks.md). */
export const WEBHOOK_EVENTS = [
  'job.completed',
  'job.failed',
  'job.waiting',
  'intervention.created',
  'intervention.answered',
  'experiment.completed',
  'experiment.failed',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/**
 * One signing secret of an endpoint, sealed (src/crypto/secrets.ts). The current secret has no
 * expiry; after a rotation the previous one signs too until `expiresAt`.
 */
export interface WebhookSecret {
  sealed: string;
  keyId: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** A workspace's webhook endpoint: where events are sent, and the secrets they are signed with. */
export interface WebhookEndpointDoc {
  _id: string;
  workspaceId: string;
  url: string;
  events: WebhookEvent[];
  description: string | null;
  enabled: boolean;
  /** Newest first: the current secret, then (after a rotation) the previous one until it expires. */
  secrets: WebhookSecret[];
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** An endpoint as services see it outside signing: everything but the sealed secrets. */
export type WebhookEndpoint = Omit<WebhookEndpointDoc, 'secrets'> & { secretExpiries: (Date | null)[] };

/** One try at sending a delivery: when, what came back (a status code or an error), how long it took. */
export interface WebhookAttempt {
  attempt: number;
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/**
 * One event sent to one endpoint. `_id` is name-based on (endpoint, event key) for deliveries made
 * by events, so one change gives one delivery however many times it is fanned out; it is also the
 * `webhook-id` header of every attempt. A replay is a new delivery with a random id and `replayOf`.
 * `body` is the exact JSON text that is signed and sent.
 */
export interface WebhookDeliveryDoc {
  _id: string;
  workspaceId: string;
  endpointId: string;
  event: WebhookEvent;
  eventKey: string;
  body: string;
  status: WebhookDeliveryStatus;
  replayOf: string | null;
  attempts: WebhookAttempt[];
  failedReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/**
 * An event as it is recorded, before it is fanned out: what happened (`event`, `data`), when
 * (`at`, the body's `timestamp`), and its identity (`key`: the same change always has the same key,
 * e.g. `job.completed:<job id>:completed`).
 */
export interface WebhookEventRecord {
  workspaceId: string;
  event: WebhookEvent;
  key: string;
  at: Date;
  data: Record<string, unknown>;
}

/**
 * A row of the webhook outbox (`webhook_events`): one recorded event not yet fanned out. `_id` is
 * name-based on the key (recording an event twice keeps one row); `dueAt` is when a follower may
 * take it (now when recorded; pushed forward while a follower holds it). The row is removed once
 * every subscribed endpoint has its delivery.
 */
export interface WebhookEventDoc {
  _id: string;
  workspaceId: string;
  event: WebhookEvent;
  key: string;
  at: Date;
  /** `data` as JSON text (platform-made, but it carries tenant strings: stored intact as text). */
  data: string;
  dueAt: Date;
}
