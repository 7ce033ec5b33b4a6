/**
 * The release store (src/releases/store.mongo.ts): the data-format record (a migration started,
 * its checkpoint saved only for the running migration, finished into the history; a stamp) and
 * the upgrade lease (one holder, renewed and released only by it, taken over when expired).
 * Platform-wide documents: each test's store is the file's own database, so the steps run in order.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createReleaseStore } from '../../src/releases/store.mongo.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

/** Known to fail on FerretDB (NOTES-repo-conformance.md); plain `it` on MongoDB, where it holds. */
const failsOnFerret = h.store === 'ferretdb' ? it.fails : it;

describe('release store', () => {
  const store = createReleaseStore(h.db);

  it('has no record on a fresh store; a stamp creates it, a second stamp changes the release', async () => {
    expect(await store.record()).toBeNull();
    await store.stamp(3, '1.2.0');
    expect(await store.record()).toMatchObject({ _id: 'data_format', version: 3, release: '1.2.0' });
    await store.stamp(3, '1.2.1');
    expect(await store.record()).toMatchObject({ version: 3, release: '1.2.1' });
    expect((await store.record())?.updatedAt).toBeInstanceOf(Date);
  });

  // FerretDB drops an empty array set by $setOnInsert in an upsert: the record has no `history`
  // (docs/operations.md and DataFormatRecord say it has one) until a migration finishes.
  failsOnFerret('a stamped record holds an empty history', async () => {
    expect(await store.record()).toHaveProperty('history', []);
  });

  it('starts a migration, saves checkpoints only for it, finishes it into the history', async () => {
    const startedAt = new Date('2026-07-01T00:00:00.000Z');
    await store.startMigration({ to: 4, name: 'split', release: '1.3.0', startedAt }, '1.3.0');
    expect(await store.record()).toMatchObject({
      version: 3,
      release: '1.3.0',
      migrating: { to: 4, name: 'split', startedAt },
    });
    const checkpoint = { after: 'abc', counts: { done: 3, ids: ['x', 'y'] }, at: new Date('2026-07-01T00:00:30.000Z') };
    await store.saveCheckpoint(4, checkpoint);
    await store.saveCheckpoint(5, { wrong: true });
    expect((await store.record())?.migrating?.checkpoint).toEqual(checkpoint);

    const at = new Date('2026-07-01T00:01:00.000Z');
    await store.finishMigration({ to: 4, name: 'split', release: '1.3.0', at, ms: 60_000 });
    const rec = await store.record();
    expect(rec).toMatchObject({ version: 4, release: '1.3.0' });
    expect(rec).not.toHaveProperty('migrating');
    expect(rec?.history).toEqual([{ to: 4, name: 'split', release: '1.3.0', at, ms: 60_000 }]);
    await store.saveCheckpoint(4, { late: true });
    expect(await store.record()).not.toHaveProperty('migrating');
  });

  // A checkpoint is "any JSON value" (MigrationContext.save) but is stored as it is, not through the
  // blob codec: FerretDB refuses a key with a dot (and nested arrays).
  failsOnFerret('a checkpoint may be any JSON value', async () => {
    await store.startMigration({ to: 5, name: 'odd', release: '1.4.0', startedAt: new Date() }, '1.4.0');
    const odd = { 'a.b': [[1, 2]], $k: 'v' };
    await store.saveCheckpoint(5, odd);
    expect((await store.record())?.migrating?.checkpoint).toEqual(odd);
  });

  it('a migration started on a store without a record starts from the version before it', async () => {
    await h.db.collection('platform').deleteOne({ _id: 'data_format' as never });
    await store.startMigration({ to: 2, name: 'first', release: '1.0.0', startedAt: new Date() }, '1.0.0');
    expect(await store.record()).toMatchObject({ version: 1, migrating: { to: 2, name: 'first' } });
  });

  it('leases to one holder at a time; renews and releases only for it', async () => {
    const a = randomUUID();
    const b = randomUUID();
    expect(await store.lease()).toBeNull();
    const outs = await Promise.all([store.tryLease(a, 60_000), store.tryLease(b, 60_000)]);
    expect(outs.filter(Boolean)).toHaveLength(1);
    const [holder, other] = outs[0] ? [a, b] : [b, a];
    expect((await store.lease())?.owner).toBe(holder);
    expect(await store.tryLease(holder, 60_000)).toBe(true);
    expect(await store.tryLease(other, 60_000)).toBe(false);
    expect(await store.renewLease(other, 60_000)).toBe(false);
    const before = (await store.lease())!.expiresAt;
    await new Promise((r) => setTimeout(r, 5));
    expect(await store.renewLease(holder, 120_000)).toBe(true);
    expect((await store.lease())!.expiresAt.getTime()).toBeGreaterThan(before.getTime());
    await store.releaseLease(other);
    expect((await store.lease())?.owner).toBe(holder);
    await store.releaseLease(holder);
    expect(await store.lease()).toBeNull();
    expect(await store.renewLease(holder, 1000)).toBe(false);
  });

  it('an expired lease is taken over by exactly one of two successors', async () => {
    const dead = randomUUID();
    expect(await store.tryLease(dead, 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    const [x, y] = [randomUUID(), randomUUID()];
    const outs = await Promise.all([store.tryLease(x, 60_000), store.tryLease(y, 60_000)]);
    expect(outs.filter(Boolean)).toHaveLength(1);
    expect((await store.lease())?.owner).toBe(outs[0] ? x : y);
    expect(await store.renewLease(dead, 60_000)).toBe(false);
  });
});
