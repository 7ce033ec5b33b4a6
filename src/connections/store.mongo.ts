import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { isDuplicateKey, releaseHold, tryHold, type HoldDoc } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import type { ConnectionDoc, ConnectionRequestDoc, IntegrationDoc } from './model.js';
import type { ConnectionStore } from './store.js';

export const connectionIndexes: IndexSpec[] = [
  {
    collection: 'integrations',
    keys: { workspaceId: 1, integrationId: 1 },
    unique: true,
    name: 'ws_integration_unique',
  },
  {
    collection: 'connections',
    keys: { workspaceId: 1, integrationId: 1, ownerId: 1 },
    unique: true,
    name: 'ws_integration_owner_unique',
  },
  { collection: 'connection_requests', keys: { workspaceId: 1, createdAt: -1 }, name: 'ws_created' },
];

/**
 * Integrations, connect requests and connections; every query filters by workspace, except the
 * OAuth callback's lookup of its request (the provider's redirect carries no credential: the
 * request id and reflex name it) and the key rotation's sweeps (all workspaces).
 */
export function createConnectionRepo(db: Db): ConnectionStore {
  const integrations = db.collection<IntegrationDoc>('integrations');
  const requests = db.collection<ConnectionRequestDoc>('connection_requests');
  const connections = db.collection<ConnectionDoc>('connections');
  /** Claims of used connection requests (a replayed callback finds its request used). */
  const used = db.collection<{ _id: string; at: Date }>('connection_request_uses');
  /** Claims of token refreshes in progress (`<connection id>:<digest of the token being replaced>`), removed when done. */
  const refreshes = db.collection<HoldDoc>('connection_refreshes');
  return {
    integration: (workspaceId: string, integrationId: string) => integrations.findOne({ workspaceId, integrationId }),
    /** Creates or replaces the workspace's integration of that id. */
    async putIntegration(i: IntegrationDoc): Promise<void> {
      await integrations.replaceOne({ workspaceId: i.workspaceId, integrationId: i.integrationId }, i, {
        upsert: true,
      });
    },
    listIntegrations: (workspaceId: string) => integrations.find({ workspaceId }).sort({ integrationId: 1 }).toArray(),
    /** Removes an integration and its connections; false when it was not configured. */
    async removeIntegration(workspaceId: string, integrationId: string): Promise<boolean> {
      if ((await integrations.deleteOne({ workspaceId, integrationId })).deletedCount !== 1) return false;
      await connections.deleteMany({ workspaceId, integrationId });
      return true;
    },

    async createRequest(r: ConnectionRequestDoc): Promise<void> {
      await requests.insertOne(r);
    },
    /** The connect request a provider's redirect names (by its id and the reflex of the callback URL). */
    findRequest: (id: string, reflexId: string) => findById(requests, id, { reflexId }),
    /** Marks a request used, once: false when it was used already (a replayed callback). */
    async useRequest(id: string): Promise<boolean> {
      try {
        await used.insertOne({ _id: id, at: new Date() });
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
      await requests.updateOne({ _id: id }, { $set: { usedAt: new Date() } });
      return true;
    },

    connection: (workspaceId: string, integrationId: string, ownerId: string) =>
      connections.findOne({ workspaceId, integrationId, ownerId }),
    /** Creates or replaces the owner's connection of the integration. */
    async putConnection(c: ConnectionDoc): Promise<void> {
      const key = { workspaceId: c.workspaceId, integrationId: c.integrationId, ownerId: c.ownerId };
      await connections.replaceOne(key, c, { upsert: true });
    },
    /** Removes the owner's connection of the integration; false when there was none. */
    removeConnection: async (workspaceId: string, integrationId: string, ownerId: string) =>
      (await connections.deleteOne({ workspaceId, integrationId, ownerId })).deletedCount === 1,
    /**
     * Runs `fn` as the one refresh of a token, however many callers (in any process) ask: the
     * refresh is claimed by a unique insert naming the token it replaces (src/kernel/store/claims.ts), and a
     * claim left by a process that died is taken over after `leaseMs`. `{ held: false }` when
     * another caller holds it.
     */
    async refreshOnce<T>(
      key: string,
      leaseMs: number,
      fn: () => Promise<T>,
      onReleaseError?: (e: unknown) => void,
    ): Promise<{ held: false } | { held: true; value: T }> {
      const holder = randomUUID();
      if (!(await tryHold(refreshes, key, holder, leaseMs))) return { held: false };
      try {
        return { held: true, value: await fn() };
      } finally {
        await releaseHold(refreshes, key, holder).catch((e: unknown) => onReleaseError?.(e));
      }
    },

    // Key rotation: sweeps of every workspace's sealed secrets. Each change names the value it replaces.
    integrationsWithSecret: () => integrations.find({ clientSecretSealed: { $ne: null } }).toArray(),
    resealIntegration: async (id: string, sealed: string, resealed: string) =>
      (
        await integrations.updateOne(
          { _id: id, clientSecretSealed: sealed },
          { $set: { clientSecretSealed: resealed } },
        )
      ).modifiedCount === 1,
    allConnections: () => connections.find({}).toArray(),
    resealConnection: async (
      id: string,
      accessSealed: string,
      set: Pick<ConnectionDoc, 'accessSealed' | 'refreshSealed' | 'keyId'>,
    ) => (await connections.updateOne({ _id: id, accessSealed }, { $set: set })).modifiedCount === 1,
    /** Removes the expired connect requests; how many there were. */
    deleteExpiredRequests: async () => (await requests.deleteMany({ expiresAt: { $lt: new Date() } })).deletedCount,
    allRequests: () => requests.find({}).toArray(),
    resealRequest: async (id: string, sealed: string, resealed: string) =>
      (await requests.updateOne({ _id: id, verifierSealed: sealed }, { $set: { verifierSealed: resealed } }))
        .modifiedCount === 1,
  };
}
