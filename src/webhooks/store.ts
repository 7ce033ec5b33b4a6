import type { Page, PageQuery } from '../kernel/store/paging.js';
import type {
  WebhookAttempt,
  WebhookDeliveryDoc,
  WebhookEndpoint,
  WebhookEndpointDoc,
  WebhookEventDoc,
  WebhookSecret,
} from './model.js';

export type { Page, PageQuery } from '../kernel/store/paging.js';

/**
 * What the webhook service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter). Every tenant operation takes the workspace; the outbox operations serve the
 * followers, which work across workspaces.
 */
export interface WebhookStore {
  createEndpoint(doc: WebhookEndpointDoc): Promise<WebhookEndpoint>;
  getEndpoint(workspaceId: string, id: string): Promise<WebhookEndpoint | null>;
  /** The endpoint with its sealed secrets (signing a delivery). */
  endpointForSigning(workspaceId: string, id: string): Promise<WebhookEndpointDoc | null>;
  /** A page of the workspace's endpoints, oldest first. */
  pageEndpoints(workspaceId: string, q: PageQuery): Promise<Page<WebhookEndpoint>>;
  /** The workspace's enabled endpoints, read from the store at each call (fan-out picks the subscribed ones). */
  enabledEndpoints(workspaceId: string): Promise<WebhookEndpoint[]>;
  /** Changes url, events, description or enabled; null when the workspace has no such endpoint. */
  updateEndpoint(
    workspaceId: string,
    id: string,
    set: Partial<Pick<WebhookEndpointDoc, 'url' | 'events' | 'description' | 'enabled'>> & { updatedAt: Date },
  ): Promise<WebhookEndpoint | null>;
  /** Replaces the endpoint's secrets (a rotation); null when the workspace has no such endpoint. */
  setSecrets(workspaceId: string, id: string, secrets: WebhookSecret[], now: Date): Promise<WebhookEndpoint | null>;
  /** Removes the endpoint and its delivery history; false when the workspace has none of that id. */
  removeEndpoint(workspaceId: string, id: string): Promise<boolean>;

  /** Records a delivery; false when one of that id exists already (the same event fanned out twice). */
  createDelivery(doc: WebhookDeliveryDoc): Promise<boolean>;
  getDelivery(workspaceId: string, id: string): Promise<WebhookDeliveryDoc | null>;
  /** A page of an endpoint's deliveries, newest first. */
  pageDeliveries(workspaceId: string, endpointId: string, q: PageQuery): Promise<Page<WebhookDeliveryDoc>>;
  /** Adds one attempt (an attempt number already recorded, a retried activity, is not added twice). */
  recordAttempt(workspaceId: string, id: string, a: WebhookAttempt): Promise<void>;
  /** Ends a pending delivery: delivered, or failed with the reason. */
  finishDelivery(
    workspaceId: string,
    id: string,
    status: 'delivered' | 'failed',
    failedReason: string | null,
  ): Promise<void>;

  /** Records an event in the outbox; false when it is recorded already (its key names its row). */
  recordEvent(doc: WebhookEventDoc): Promise<boolean>;
  /** Up to `limit` outbox rows due at `now`, any workspace. */
  dueEvents(now: Date, limit: number): Promise<WebhookEventDoc[]>;
  /** Holds a row for one follower until `until`; false when another follower moved it first. */
  holdEvent(id: string, seen: Date, until: Date): Promise<boolean>;
  /** Removes a fanned-out row. */
  eventDone(id: string): Promise<void>;

  /** Key rotation: re-seals every endpoint secret not under `keyId`; returns how many endpoints changed. */
  resealAll(keyId: string, reseal: (sealed: string) => string): Promise<number>;
}
