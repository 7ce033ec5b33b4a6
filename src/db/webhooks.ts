import type { Db } from 'mongodb';
import type { IndexSpec } from './client.js';
import { claim } from './claims.js';
import { findById } from './client.js';
import { page, pageIndexes, type Page, type PageQuery } from './paging.js';

export type { Page, PageQuery } from './paging.js';

/** The events an endpoint may subscribe to (docs/webhooks.md). */
export const WEBHOOK_EVENTS = [
  'job.completed',
  'job.failed',
  'job.waiting',
  'intervention.created',
  'intervention.answered',
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

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/**
 * One event sent to one endpoint. `_id` is name-based on (endpoint, event key) for deliveries made
 * by events, so one job transition gives one delivery however many writers report it; a replay is
 * a new delivery with a random id and `replayOf`. `body` is the exact JSON text that is signed and sent.
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

export const webhookIndexes: IndexSpec[] = [
  // Events find a workspace's enabled endpoints.
  { collection: 'webhook_endpoints', keys: { workspaceId: 1, enabled: 1 }, name: 'ws_enabled' },
  // GET /v1/webhook-endpoints pages oldest first; GET …/:id/deliveries newest first (src/db/paging.ts).
  ...pageIndexes('webhook_endpoints', ['workspaceId'], ['createdAt']),
  ...pageIndexes('webhook_deliveries', ['workspaceId', 'endpointId'], ['createdAt']),
];

const publicEndpoint = ({ secrets, ...e }: WebhookEndpointDoc): WebhookEndpoint => ({
  ...e,
  secretExpiries: secrets.map((s) => s.expiresAt),
});

/** Webhook endpoints and their deliveries; every operation is scoped to the workspace in its filter. */
export function createWebhookRepo(db: Db) {
  const endpoints = db.collection<WebhookEndpointDoc>('webhook_endpoints');
  const deliveries = db.collection<WebhookDeliveryDoc>('webhook_deliveries');
  return {
    createEndpoint: async (doc: WebhookEndpointDoc): Promise<WebhookEndpoint> => {
      await endpoints.insertOne(doc);
      return publicEndpoint(doc);
    },
    getEndpoint: async (workspaceId: string, id: string): Promise<WebhookEndpoint | null> => {
      const d = await findById(endpoints, id, { workspaceId });
      return d ? publicEndpoint(d) : null;
    },
    /** The endpoint with its sealed secrets (signing a delivery). */
    endpointForSigning: (workspaceId: string, id: string): Promise<WebhookEndpointDoc | null> =>
      findById(endpoints, id, { workspaceId }),
    /** A page of the workspace's endpoints, oldest first. */
    pageEndpoints: async (workspaceId: string, q: PageQuery): Promise<Page<WebhookEndpoint>> => {
      const p = await page(endpoints, { workspaceId }, { field: 'createdAt', dir: 1 }, q);
      return { ...p, items: p.items.map(publicEndpoint) };
    },
    /** The workspace's enabled endpoints (events pick the subscribed ones). */
    enabledEndpoints: async (workspaceId: string): Promise<WebhookEndpoint[]> =>
      (await endpoints.find({ workspaceId, enabled: true }).toArray()).map(publicEndpoint),
    /** Changes url, events, description or enabled; null when the workspace has no such endpoint. */
    updateEndpoint: async (
      workspaceId: string,
      id: string,
      set: Partial<Pick<WebhookEndpointDoc, 'url' | 'events' | 'description' | 'enabled'>> & { updatedAt: Date },
    ): Promise<WebhookEndpoint | null> => {
      const d = await endpoints.findOneAndUpdate({ _id: id, workspaceId }, { $set: set }, { returnDocument: 'after' });
      return d ? publicEndpoint(d) : null;
    },
    /** Replaces the endpoint's secrets (a rotation); null when the workspace has no such endpoint. */
    setSecrets: async (
      workspaceId: string,
      id: string,
      secrets: WebhookSecret[],
      now: Date,
    ): Promise<WebhookEndpoint | null> => {
      const d = await endpoints.findOneAndUpdate(
        { _id: id, workspaceId },
        { $set: { secrets, updatedAt: now } },
        { returnDocument: 'after' },
      );
      return d ? publicEndpoint(d) : null;
    },
    /** Removes the endpoint and its delivery history; false when the workspace has none of that id. */
    removeEndpoint: async (workspaceId: string, id: string): Promise<boolean> => {
      const gone = (await endpoints.deleteOne({ _id: id, workspaceId })).deletedCount === 1;
      if (gone) await deliveries.deleteMany({ workspaceId, endpointId: id });
      return gone;
    },

    /** Records a delivery; false when one of that id exists already (the same event reported twice). */
    createDelivery: (doc: WebhookDeliveryDoc): Promise<boolean> => claim(deliveries, doc),
    getDelivery: (workspaceId: string, id: string): Promise<WebhookDeliveryDoc | null> =>
      findById(deliveries, id, { workspaceId }),
    /** A page of an endpoint's deliveries, newest first. */
    pageDeliveries: (workspaceId: string, endpointId: string, q: PageQuery): Promise<Page<WebhookDeliveryDoc>> =>
      page(deliveries, { workspaceId, endpointId }, { field: 'createdAt', dir: -1 }, q),
    /**
     * Adds one attempt (a delivery's attempts are made one after another by its one workflow, so
     * there is a single writer); an attempt number already recorded (a retried activity) is not added twice.
     */
    recordAttempt: async (workspaceId: string, id: string, a: WebhookAttempt): Promise<void> => {
      await deliveries.updateOne(
        { _id: id, workspaceId, 'attempts.attempt': { $ne: a.attempt } },
        { $push: { attempts: a }, $set: { updatedAt: a.at } },
      );
    },
    /** Ends a pending delivery: delivered, or failed with the reason. */
    finishDelivery: async (
      workspaceId: string,
      id: string,
      status: 'delivered' | 'failed',
      failedReason: string | null,
    ): Promise<void> => {
      const now = new Date();
      await deliveries.updateOne(
        { _id: id, workspaceId, status: 'pending' },
        { $set: { status, failedReason, finishedAt: now, updatedAt: now } },
      );
    },

    /** Key rotation: re-seals every endpoint secret not under `keyId` with `reseal`; returns how many endpoints changed. */
    async resealAll(keyId: string, reseal: (sealed: string) => string): Promise<number> {
      let changed = 0;
      // Every endpoint is read (a rare operator step): those with a secret under another key are rewritten.
      for await (const d of endpoints.find({})) {
        if (d.secrets.every((s) => s.keyId === keyId)) continue;
        const secrets = d.secrets.map((s) => (s.keyId === keyId ? s : { ...s, sealed: reseal(s.sealed), keyId }));
        const r = await endpoints.updateOne(
          { _id: d._id, workspaceId: d.workspaceId, updatedAt: d.updatedAt },
          { $set: { secrets } },
        );
        changed += r.modifiedCount;
      }
      return changed;
    },
  };
}
export type WebhookRepo = ReturnType<typeof createWebhookRepo>;
