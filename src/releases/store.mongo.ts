import type { Collection, Db } from 'mongodb';
import { claim } from '../kernel/store/claims.js';
import type { DataFormatRecord, UpgradeLease } from './model.js';
import type { ReleaseStore } from './store.js';

/** The collection of platform-wide documents (not a tenant's): the data-format record and the upgrade lease. */
export const PLATFORM_COLLECTION = 'platform';

type PlatformDoc = DataFormatRecord | UpgradeLease;

/**
 * MongoDB/FerretDB adapter. The lease is a claim by unique insert (src/kernel/store/claims.ts, the one
 * concurrency mechanism): a holder that died leaves an expired lease, which a successor deletes
 * (by its exact owner and expiry, so two successors cannot both remove a fresh one) and claims.
 * The record is written only by the lease holder, so its updates are uncontended.
 */
export function createReleaseStore(db: Db): ReleaseStore {
  const coll = db.collection<PlatformDoc>(PLATFORM_COLLECTION);
  const records = coll as unknown as Collection<DataFormatRecord>;
  const leases = coll as unknown as Collection<UpgradeLease>;
  const ID = 'data_format' as const;
  return {
    record: () => records.findOne({ _id: ID }),

    async startMigration(m, release) {
      await records.updateOne(
        { _id: ID },
        { $set: { migrating: m, release, updatedAt: new Date() }, $setOnInsert: { version: m.to - 1, history: [] } },
        { upsert: true },
      );
    },

    async saveCheckpoint(to, checkpoint) {
      await records.updateOne(
        { _id: ID, 'migrating.to': to },
        { $set: { 'migrating.checkpoint': checkpoint, updatedAt: new Date() } },
      );
    },

    async finishMigration(entry) {
      const now = new Date();
      const rec = await records.findOne({ _id: ID });
      await records.updateOne(
        { _id: ID },
        {
          $set: {
            version: entry.to,
            release: entry.release,
            updatedAt: now,
            history: [...(rec?.history ?? []), entry],
          },
          $unset: { migrating: '' },
        },
        { upsert: true },
      );
    },

    async stamp(version, release) {
      await records.updateOne(
        { _id: ID },
        { $set: { version, release, updatedAt: new Date() }, $setOnInsert: { history: [] } },
        { upsert: true },
      );
    },

    async tryLease(owner, ms) {
      const doc: UpgradeLease = { _id: 'upgrade_lease', owner, expiresAt: new Date(Date.now() + ms) };
      if (await claim(leases, doc)) return true;
      const held = await leases.findOne({ _id: 'upgrade_lease' });
      if (held && held.expiresAt.getTime() > Date.now()) return held.owner === owner;
      // Expired (its holder died or stalled): remove exactly that lease, then claim like anyone else.
      if (held) await leases.deleteOne({ _id: 'upgrade_lease', owner: held.owner, expiresAt: held.expiresAt });
      return claim(leases, doc);
    },

    async renewLease(owner, ms) {
      const r = await leases.updateOne(
        { _id: 'upgrade_lease', owner },
        { $set: { expiresAt: new Date(Date.now() + ms) } },
      );
      return r.matchedCount === 1;
    },

    async releaseLease(owner) {
      await leases.deleteOne({ _id: 'upgrade_lease', owner });
    },

    async lease() {
      const l = await leases.findOne({ _id: 'upgrade_lease' });
      return l ? { owner: l.owner, expiresAt: l.expiresAt } : null;
    },
  };
}
