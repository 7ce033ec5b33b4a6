import { readdirSync } from 'node:fs';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, loadFixture, readFixture, type Manifest, type RecordedRead } from '../../scripts/release-fixture.js';
import {
  DATA_FORMAT_VERSION,
  MIGRATIONS,
  PLATFORM_COLLECTION,
  VERSION,
  upgradeStore,
  type DataFormatRecord,
} from '../../src/releases/index.js';
import { startTestApp, testConfig, type TestApp } from '../support/app.js';

/**
 * The upgrade a release promises (docs/operations.md, "Releases and upgrades"): the data each
 * earlier release stored (test/fixtures/releases/<version>/, written by scripts/release-fixture.ts
 * when that release was cut) is loaded into a fresh database and blob folder, the current code
 * starts on it (start-up runs the migrations), and every route read recorded by that release
 * answers the same status and body.
 */
const releases = readdirSync(FIXTURES).sort();

/**
 * The one field a read changes by itself: an API key's last use (the reads here use the key). It
 * must still be a time; its value is left out of the comparison.
 */
function stable(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(stable);
  if (body && typeof body === 'object')
    return Object.fromEntries(
      Object.entries(body).map(([k, v]) =>
        k === 'last_used_at' && typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? [k, 'a time'] : [k, stable(v)],
      ),
    );
  return body;
}

describe.each(releases)('upgrade from release %s', (release) => {
  const dir = path.join(FIXTURES, release);
  let app: TestApp & { close(): Promise<void> };
  let manifest: Manifest;
  let reads: RecordedRead[];

  beforeAll(async () => {
    ({ manifest, reads } = await readFixture(dir));
    const config = testConfig();
    const client = await MongoClient.connect(config.MONGODB_URI);
    try {
      await loadFixture(client.db(config.MONGODB_DB), config.DATA_DIR, dir);
    } finally {
      await client.close();
    }
    // Start-up (test/support/app.ts runs the same upgrade step as api/server.ts and the worker).
    app = await startTestApp({ MONGODB_DB: config.MONGODB_DB, DATA_DIR: config.DATA_DIR });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('start-up migrated the store to the current data format and recorded each step', async () => {
    const rec = await app.deps.db.collection<DataFormatRecord>(PLATFORM_COLLECTION).findOne({ _id: 'data_format' });
    expect(rec).toMatchObject({ version: DATA_FORMAT_VERSION, release: VERSION });
    expect(rec?.migrating).toBeUndefined();
    expect(rec?.history.map((h) => h.to)).toEqual(
      MIGRATIONS.filter((m) => m.to > manifest.data_format).map((m) => m.to),
    );
    // A second start finds nothing to do.
    expect((await upgradeStore(app.deps, app.services)).ran).toEqual([]);
  });

  it('every route read recorded by that release answers the same status and body', async () => {
    const jwt = await app.services.auth.signJwt({
      sub: manifest.jwt_sub,
      workspace_id: manifest.workspace_id,
      roles: ['workspace_admin'],
    });
    expect(reads.length).toBeGreaterThan(20);
    for (const r of reads) {
      const res = await app.get(
        r.path,
        r.jwt ? jwt : manifest.api_key,
        r.brain ? { 'x-brain-id': manifest.brain_id } : {},
      );
      expect({ path: r.path, status: res.status, body: stable(res.body) }).toEqual({
        path: r.path,
        status: r.status,
        body: stable(r.body),
      });
    }
  });

  it("the cron receptor's Temporal Schedule is made again from the store (start-up's schedule reconcile)", async () => {
    const recorded = reads.find((r) => r.path.startsWith('/v1/receptors?'))!.body as {
      receptors: { id: string; active_channels: string[] }[];
    };
    const cron = recorded.receptors.filter((r) => r.active_channels.includes('cron')).map((r) => r.id);
    expect(cron.length).toBeGreaterThan(0);
    try {
      const r = await app.services.receptors.reconcileSchedules(manifest.workspace_id);
      expect(r.checked).toBe(cron.length);
      for (const id of cron) expect(await app.services.schedules.describe(id)).not.toBeNull();
    } finally {
      for (const id of cron) await app.services.schedules.remove(id).catch(() => undefined);
    }
  });
});
