import type { Db } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { claim } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';
import type {
  WebhookAttempt,
  WebhookDeliveryDoc,
  WebhookEndpoint,
  WebhookEndpointDoc,
  WebhookEventDoc,
  WebhookSecret,
} from './model.js';
import type { WebhookStore } from './store.js';

export const webhookIndexes: IndexSpec[] = [
  // Events find a workspace's enabled endpoints.
  { collection: 'webhook_endpoints', keys: { workspaceId: 1, enabled: 1 }, name: 'ws_enabled' },
  // GET /v1/webhook-endpoints pages oldest first; GET …/:id/deliveries newest first (src/kernel/store/paging.ts).
  ...pageIndexes('webhook_endpoints', ['workspaceId'], ['createdAt']),
  ...pageIndexes('webhook_deliveries', ['workspaceId', 'endpointId'], ['createdAt']),
  // The outbox's followers take the rows that are due (a range on one typed key: pushed down with the limit).
  { collection: 'webhook_events', keys: { dueAt: 1 }, name: 'due' },
];

const publicEndpoint = ({ secrets, ...e }: WebhookEndpointDoc): WebhookEndpoint => ({
  ...e,
  secretExpiries: secrets.map((s) => s.expiresAt),
});

/**
 * The webhook store on MongoDB (and FerretDB): endpoints, their deliveries and the outbox of
 * recorded events. Every tenant operation is scoped to the workspace in its filter.
 */
export function createWebhookRepo(db: Db): WebhookStore {
  const endpoints = db.collection<WebhookEndpointDoc>('webhook_endpoints');
  const deliveries = db.collection<WebhookDeliveryDoc>('webhook_deliveries');
  const events = db.collection<WebhookEventDoc>('webhook_events');
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

    /** Records an event in the outbox; false when it is recorded already (its key names its row). */
    recordEvent: (doc: WebhookEventDoc): Promise<boolean> => claim(events, doc),
    /** Up to `limit` outbox rows due at `now`, any workspace (the followers' read). */
    dueEvents: (now: Date, limit: number): Promise<WebhookEventDoc[]> =>
      events
        .find({ dueAt: { $lte: now } })
        .limit(limit)
        .toArray(),
    /**
     * Holds a row for one follower until `until` (it stays due for nobody else meanwhile): false when
     * another follower moved it first. Two followers may still both hold a row in a race; fanning
     * out is idempotent (delivery ids are name-based), so that only costs a repeated read.
     */
    holdEvent: async (id: string, seen: Date, until: Date): Promise<boolean> =>
      (await events.updateOne({ _id: id, dueAt: seen }, { $set: { dueAt: until } })).modifiedCount === 1,
    /** Removes a fanned-out row. */
    eventDone: async (id: string): Promise<void> => {
      await events.deleteOne({ _id: id });
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
