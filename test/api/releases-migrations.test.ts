import { describe, expect, it } from 'vitest';
import {
  DATA_FORMAT_VERSION,
  DataFormatTooNew,
  MIGRATIONS,
  PLATFORM_COLLECTION,
  checkMigrations,
  upgradeStore,
  type DataFormatRecord,
  type Migration,
} from '../../src/releases/index.js';
import { freePorts } from '../../scripts/embedded.js';
import { useTestApp } from '../support/app.js';
import { spawnApiProcess } from '../support/worker.js';

/**
 * Start-up's upgrade step (src/releases): the data-format record, a newer format refused, a
 * migration that crashed half-way resumed from its saved progress by the next start (after the
 * dead holder's lease expires), and two processes starting at once running each migration once.
 */
const app = useTestApp();

const records = () => app.deps.db.collection<DataFormatRecord>(PLATFORM_COLLECTION);
const ITEMS = 'release_test_items';

/** A test migration over ITEMS in batches of 10, saving the last id done; `crashAfter` batches then throws. */
function batched(seen: string[], crashAfter?: number): Migration {
  return {
    to: 1,
    name: 'mark-items',
    async run({ db, checkpoint, save }) {
      let after = typeof checkpoint === 'string' ? checkpoint : '';
      for (let batch = 0; ; batch++) {
        if (crashAfter !== undefined && batch === crashAfter) throw new Error('crash');
        const docs = await db
          .collection<{ _id: string }>(ITEMS)
          .find({ _id: { $gt: after } })
          .sort({ _id: 1 })
          .limit(10)
          .toArray();
        if (!docs.length) return;
        for (const d of docs) {
          seen.push(d._id);
          await db.collection<{ _id: string }>(ITEMS).updateOne({ _id: d._id }, { $set: { marked: true } });
        }
        after = docs[docs.length - 1]._id;
        await save(after);
      }
    },
  };
}

async function resetTo(items: number) {
  await records().deleteMany({});
  await app.deps.db.collection(ITEMS).deleteMany({});
  if (items)
    await app.deps.db
      .collection<{ _id: string }>(ITEMS)
      .insertMany(Array.from({ length: items }, (_, i) => ({ _id: `item-${String(i).padStart(3, '0')}` })));
}

describe('releases: data format and migrations', () => {
  it('the migrations are numbered 1, 2, … and the newest is the data-format version; start-up recorded it', async () => {
    expect(checkMigrations(MIGRATIONS)).toBe(DATA_FORMAT_VERSION);
    const rec = await records().findOne({ _id: 'data_format' });
    expect(rec).toMatchObject({ version: DATA_FORMAT_VERSION, release: '0.1.0' });
    expect(rec?.migrating).toBeUndefined();
    // Start-up made the indexes too (after the migrations).
    const names = (await app.deps.db.collection('neurons').indexes()).map((i) => i.name);
    expect(names.length).toBeGreaterThan(1);
    // Health and the API reference name the version of package.json.
    expect((await app.get('/health')).body).toMatchObject({ version: '0.1.0' });
    // Running it again changes nothing and runs nothing.
    expect(await upgradeStore(app.deps, app.services)).toEqual({
      from: DATA_FORMAT_VERSION,
      to: DATA_FORMAT_VERSION,
      ran: [],
    });
  });

  it('data format 2 (job-places): runs stored before it are marked as holding a place and count toward the share; children and queued runs do not', async () => {
    const ws = `ws-places-${Date.now()}`;
    const now = new Date();
    const job = (id: string, extra: Record<string, unknown>) => ({
      _id: id,
      workspaceId: ws,
      brainId: null,
      kind: 'neuron',
      status: 'running',
      progress: 0,
      currentStep: null,
      failedReason: null,
      result: null,
      waitingFor: null,
      neuronId: null,
      pathwayId: null,
      receptorId: null,
      traceId: null,
      parentJobId: null,
      clientNonce: null,
      createdBy: null,
      createdAt: now,
      finishedAt: null,
      updatedAt: now,
      ...extra,
    });
    // As a release before format 2 stored them: no holdsPlace field.
    await app.deps.db
      .collection('jobs')
      .insertMany([
        job(`${ws}-run`, {}),
        job(`${ws}-pending`, { status: 'pending', kind: 'pathway' }),
        job(`${ws}-child`, { parentJobId: `${ws}-run` }),
        job(`${ws}-queued`, { status: 'pending', queued: true }),
        job(`${ws}-ingest`, { kind: 'ingest' }),
      ] as never[]);
    const repo = app.deps.repos.jobs;
    const since = new Date(now.getTime() - 60_000);
    expect(await repo.countActiveRuns(ws, since, 50)).toBe(0);
    const migration = MIGRATIONS.find((m) => m.name === 'job-places');
    expect(migration?.to).toBe(2);
    expect(await repo.markPlaces()).toBeGreaterThanOrEqual(2);
    expect(await repo.countActiveRuns(ws, since, 50)).toBe(2);
    expect(await repo.countActiveRuns(ws, since, 1)).toBe(1);
    // Again: nothing more to mark.
    expect(await repo.markPlaces()).toBe(0);
    await app.deps.db.collection('jobs').deleteMany({ workspaceId: ws });
  });

  it('a store with a newer data format is refused, naming both versions, and is left untouched', async () => {
    await records().updateOne({ _id: 'data_format' }, { $set: { version: DATA_FORMAT_VERSION + 5, release: '9.0.0' } });
    try {
      const err = await upgradeStore(app.deps, app.services).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DataFormatTooNew);
      const msg = (err as Error).message;
      expect(msg).toContain(`data format ${DATA_FORMAT_VERSION + 5}`);
      expect(msg).toContain(`data format ${DATA_FORMAT_VERSION} at most`);
      expect(msg).toContain('9.0.0');
      expect(await records().findOne({ _id: 'data_format' })).toMatchObject({
        version: DATA_FORMAT_VERSION + 5,
        release: '9.0.0',
      });
      // No lease is left behind.
      expect(await app.deps.db.collection(PLATFORM_COLLECTION).countDocuments({ _id: 'upgrade_lease' as never })).toBe(
        0,
      );
    } finally {
      await records().updateOne({ _id: 'data_format' }, { $set: { version: DATA_FORMAT_VERSION, release: '0.1.0' } });
    }
  });

  it('the API process refuses to start on a newer data format: one line naming both versions, exit 1', async () => {
    await records().updateOne({ _id: 'data_format' }, { $set: { version: DATA_FORMAT_VERSION + 1, release: '0.9.0' } });
    try {
      const [port] = await freePorts(1);
      const err = await spawnApiProcess(app, port).then(
        (child) => {
          child.kill('SIGKILL');
          return new Error('the API started');
        },
        (e: unknown) => e as Error,
      );
      expect(err.message).toContain('api exited 1');
      expect(err.message).toContain(
        `cortex api: refusing to start: the store holds data format ${DATA_FORMAT_VERSION + 1} (recorded by release 0.9.0), and release 0.1.0 understands data format ${DATA_FORMAT_VERSION} at most`,
      );
    } finally {
      await records().updateOne({ _id: 'data_format' }, { $set: { version: DATA_FORMAT_VERSION, release: '0.1.0' } });
    }
  });

  it('a migration that crashed half-way is resumed from its saved progress by the next start, once the dead holder’s lease expires', async () => {
    await resetTo(40);
    const first: string[] = [];
    await expect(upgradeStore(app.deps, app.services, { migrations: [batched(first, 2)] })).rejects.toThrow('crash');
    expect(first).toHaveLength(20);
    const half = await records().findOne({ _id: 'data_format' });
    expect(half).toMatchObject({ version: 0, migrating: { to: 1, name: 'mark-items', checkpoint: 'item-019' } });
    // The crashed process never gave its lease back: a successor waits for it to expire.
    await app.deps.db
      .collection<{ _id: string; owner: string; expiresAt: Date }>(PLATFORM_COLLECTION)
      .insertOne({ _id: 'upgrade_lease', owner: 'dead-process', expiresAt: new Date(Date.now() + 1500) });
    const second: string[] = [];
    const t = Date.now();
    const r = await upgradeStore(app.deps, app.services, { migrations: [batched(second)], leaseMs: 1500 });
    expect(Date.now() - t).toBeGreaterThanOrEqual(1000);
    expect(r).toEqual({ from: 0, to: 1, ran: ['mark-items'] });
    // Only the rest was done the second time, and every item is done.
    expect(second).toHaveLength(20);
    expect(second[0]).toBe('item-020');
    expect(await app.deps.db.collection(ITEMS).countDocuments({ marked: true })).toBe(40);
    const done = await records().findOne({ _id: 'data_format' });
    expect(done?.version).toBe(1);
    expect(done?.migrating).toBeUndefined();
    expect(done?.history.map((h) => h.name)).toEqual(['mark-items']);
    expect(done?.history[0].release).toBe('0.1.0');
  });

  it('two processes starting at once: one migrates, the other waits for it and runs nothing', async () => {
    await resetTo(15);
    const a: string[] = [];
    const b: string[] = [];
    const [ra, rb] = await Promise.all([
      upgradeStore(app.deps, app.services, { migrations: [batched(a)], owner: 'a' }),
      upgradeStore(app.deps, app.services, { migrations: [batched(b)], owner: 'b' }),
    ]);
    expect([...ra.ran, ...rb.ran]).toEqual(['mark-items']);
    expect(a.length + b.length).toBe(15);
    expect((await records().findOne({ _id: 'data_format' }))?.version).toBe(1);
  });
});
