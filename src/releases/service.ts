import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { VERSION } from '../kernel/config.js';
import { ensureIndexes } from '../kernel/store/client.js';
import { allIndexes } from '../compose/stores.js';
import type { Deps } from '../compose/deps.js';
import type { Services } from '../compose/services.js';
import { DATA_FORMAT_VERSION, MIGRATIONS } from './migrations.js';
import type { Migration } from './model.js';
import { createReleaseStore } from './store.mongo.js';

/** How long the upgrade lease lasts without renewal: a holder that died frees it after this. */
const UPGRADE_LEASE_MS = 30_000;
/** How often a process waiting for another's upgrade looks at the lease again. */
const WAIT_POLL_MS = 500;
/** How often a waiting process says so in its log. */
const WAIT_LOG_MS = 10_000;

/** The store holds a data format newer than this release understands: the process refuses to start. */
export class DataFormatTooNew extends Error {
  constructor(
    readonly found: number,
    readonly understood: number,
    readonly writtenBy: string | undefined,
  ) {
    super(
      `the store holds data format ${found}${writtenBy ? ` (recorded by release ${writtenBy})` : ''}, ` +
        `and release ${VERSION} understands data format ${understood} at most: ` +
        `run release ${writtenBy ?? 'that wrote it'} or newer, or restore the backup taken before the upgrade`,
    );
    this.name = 'DataFormatTooNew';
  }
}

/** The upgrade lease was lost while a migration ran (the process stalled past the lease): it stops. */
class UpgradeLeaseLost extends Error {
  constructor() {
    super('the upgrade lease was lost while migrating (this process stalled longer than the lease); start again');
    this.name = 'UpgradeLeaseLost';
  }
}

export interface UpgradeOptions {
  /** The ordered migrations (tests give their own); default MIGRATIONS. */
  migrations?: readonly Migration[];
  /** Lease length (tests shorten it); default UPGRADE_LEASE_MS. */
  leaseMs?: number;
  /** This process's name in the lease; default host, pid and a random suffix. */
  owner?: string;
}

export interface UpgradeResult {
  /** The data format the store held before, and holds now. */
  from: number;
  to: number;
  /** The migrations this process ran (another process may have run them instead). */
  ran: string[];
}

/** The migrations must be 1, 2, 3, … in order; the newest is the version this release writes. */
export function checkMigrations(list: readonly Migration[]): number {
  list.forEach((m, i) => {
    if (m.to !== i + 1) throw new Error(`migration ${m.name} produces version ${m.to}, expected ${i + 1}`);
  });
  return list.length;
}

/**
 * Start-up's one path to a store this release can serve (docs/operations.md, "Releases and
 * upgrades"): under the upgrade lease (one process at a time; the others wait for it), refuse a
 * data format newer than this release understands, run each migration the store has not had, in
 * order, each resuming from its saved progress, record the new version, then create the indexes
 * (after the migrations, so that a migration can make data fit a new unique index first).
 */
export async function upgradeStore(deps: Deps, services: Services, opts: UpgradeOptions = {}): Promise<UpgradeResult> {
  const migrations = opts.migrations ?? MIGRATIONS;
  const target = opts.migrations ? checkMigrations(migrations) : DATA_FORMAT_VERSION;
  const leaseMs = opts.leaseMs ?? UPGRADE_LEASE_MS;
  const owner = opts.owner ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const log = deps.log.child({ component: 'releases' });
  const store = createReleaseStore(deps.db);

  // A store newer than this release is refused before anything waits or writes.
  const seen = await store.record();
  if (seen && seen.version > target) throw new DataFormatTooNew(seen.version, target, seen.release);

  let waitedSince = 0;
  while (!(await store.tryLease(owner, leaseMs))) {
    if (!waitedSince || Date.now() - waitedSince >= WAIT_LOG_MS) {
      waitedSince = Date.now();
      const held = await store.lease();
      log.info({ holder: held?.owner, until: held?.expiresAt }, 'waiting for another process to upgrade the store');
    }
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
  }
  let lost = false;
  const renew = setInterval(() => {
    store.renewLease(owner, leaseMs).then(
      (held) => {
        if (!held) lost = true;
      },
      (e: unknown) => log.warn({ err: (e as Error).message }, 'could not renew the upgrade lease; trying again'),
    );
  }, leaseMs / 3);
  renew.unref();
  const assertHeld = () => {
    if (lost) throw new UpgradeLeaseLost();
  };
  try {
    const rec = await store.record();
    const from = rec?.version ?? 0;
    if (from > target) throw new DataFormatTooNew(from, target, rec?.release);
    const ran: string[] = [];
    for (const m of migrations.slice(from)) {
      assertHeld();
      const resumed = rec?.migrating?.to === m.to ? rec.migrating : undefined;
      const startedAt = resumed?.startedAt ?? new Date();
      await store.startMigration(
        { to: m.to, name: m.name, release: VERSION, startedAt, checkpoint: resumed?.checkpoint },
        VERSION,
      );
      log.info(
        { migration: m.name, from: m.to - 1, to: m.to, resumed: Boolean(resumed), checkpoint: resumed?.checkpoint },
        resumed ? 'resuming data migration' : 'starting data migration',
      );
      const t = performance.now();
      await m.run({
        db: deps.db,
        deps,
        services,
        log: log.child({ migration: m.name }),
        checkpoint: resumed?.checkpoint,
        save: async (checkpoint) => {
          assertHeld();
          await store.saveCheckpoint(m.to, checkpoint);
          if (!(await store.renewLease(owner, leaseMs))) lost = true;
          assertHeld();
        },
      });
      assertHeld();
      const ms = Math.round(performance.now() - t);
      await store.finishMigration({ to: m.to, name: m.name, release: VERSION, at: new Date(), ms });
      log.info({ migration: m.name, to: m.to, ms }, 'data migration done');
      ran.push(m.name);
    }
    await store.stamp(target, VERSION);
    await ensureIndexes(deps.db, allIndexes, log);
    if (from !== target) log.info({ from, to: target, release: VERSION }, 'store upgraded');
    else log.debug({ version: target, release: VERSION }, 'store data format is current');
    return { from, to: target, ran };
  } finally {
    clearInterval(renew);
    await store.releaseLease(owner).catch(() => undefined);
  }
}
