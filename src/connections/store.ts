import type { ConnectionDoc, ConnectionRequestDoc, IntegrationDoc } from './model.js';

/**
 * What the connection service asks of its store, in domain terms (store.mongo.ts is the MongoDB
 * and FerretDB adapter): a workspace's integrations, the connect requests of the OAuth flow and the
 * connections made (tokens sealed). Every tenant operation takes the workspace, except the OAuth
 * callback's lookup of its request (the provider's redirect carries no credential: the request id
 * and reflex name it) and the key rotation's sweeps (all workspaces).
 */
export interface ConnectionStore {
  /** The workspace's integration of that id, or null. */
  integration(workspaceId: string, integrationId: string): Promise<IntegrationDoc | null>;
  /** Creates or replaces the workspace's integration of that id. */
  putIntegration(i: IntegrationDoc): Promise<void>;
  /** The workspace's integrations, by integration id. */
  listIntegrations(workspaceId: string): Promise<IntegrationDoc[]>;
  /** Removes an integration and its connections; false when it was not configured. */
  removeIntegration(workspaceId: string, integrationId: string): Promise<boolean>;
  /** Records a new connect request. */
  createRequest(r: ConnectionRequestDoc): Promise<void>;
  /** The connect request a provider's redirect names (by its id and the reflex of the callback URL). */
  findRequest(id: string, reflexId: string): Promise<ConnectionRequestDoc | null>;
  /** Marks a request used, once: false when it was used already (a replayed callback). */
  useRequest(id: string): Promise<boolean>;
  /** The owner's connection of the workspace's integration, or null. */
  connection(workspaceId: string, integrationId: string, ownerId: string): Promise<ConnectionDoc | null>;
  /** Creates or replaces the owner's connection of the integration. */
  putConnection(c: ConnectionDoc): Promise<void>;
  /** Removes the owner's connection of the integration; false when there was none. */
  removeConnection(workspaceId: string, integrationId: string, ownerId: string): Promise<boolean>;
  /**
   * Runs `fn` as the one refresh of a token (`key` names the token it replaces), however many
   * callers in any process ask; a claim left by a process that died is taken over after `leaseMs`.
   * `{ held: false }` when another caller holds it.
   */
  refreshOnce<T>(
    key: string,
    leaseMs: number,
    fn: () => Promise<T>,
    onReleaseError?: (e: unknown) => void,
  ): Promise<{ held: false } | { held: true; value: T }>;
  /** Key rotation: every workspace's integrations with a sealed client secret. */
  integrationsWithSecret(): Promise<IntegrationDoc[]>;
  /** Key rotation: replaces the integration's sealed secret if it is still `sealed`; false when it moved. */
  resealIntegration(id: string, sealed: string, resealed: string): Promise<boolean>;
  /** Key rotation: every workspace's connections. */
  allConnections(): Promise<ConnectionDoc[]>;
  /** Key rotation: replaces the connection's sealed tokens if its access token is still `accessSealed`; false when it moved. */
  resealConnection(
    id: string,
    accessSealed: string,
    set: Pick<ConnectionDoc, 'accessSealed' | 'refreshSealed' | 'keyId'>,
  ): Promise<boolean>;
  /** Removes the expired connect requests; how many there were. */
  deleteExpiredRequests(): Promise<number>;
  /** Key rotation: every workspace's connect requests. */
  allRequests(): Promise<ConnectionRequestDoc[]>;
  /** Key rotation: replaces the request's sealed verifier if it is still `sealed`; false when it moved. */
  resealRequest(id: string, sealed: string, resealed: string): Promise<boolean>;
}
