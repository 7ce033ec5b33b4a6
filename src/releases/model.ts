import type { Db } from 'mongodb';
import type { Deps } from '../compose/deps.js';
import type { Logger } from '../kernel/logger.js';
import type { Services } from '../compose/services.js';

/**
 * What the store says about its own data: the data-format version it holds, the release that
 * last wrote that record, the migration under way (with its progress, so a start after a crash
 * resumes it) and the migrations already applied. One document, `platform/data_format`.
 */
export interface DataFormatRecord {
  _id: 'data_format';
  /** The data-format version the store holds; a store without the record is version 0 (release 0.1.0 recorded none). */
  version: number;
  /** The release (package.json version) that last started on this store. */
  release: string;
  updatedAt: Date;
  /** Set while a migration runs: the version it produces, its name and its last saved progress. */
  migrating?: { to: number; name: string; release: string; startedAt: Date; checkpoint?: unknown };
  /** Every migration applied, oldest first. */
  history: { to: number; name: string; release: string; at: Date; ms: number }[];
}

/** The lease that lets one process at a time upgrade the store (`platform/upgrade_lease`). */
export interface UpgradeLease {
  _id: 'upgrade_lease';
  owner: string;
  expiresAt: Date;
}

/** What a migration is given: the store, the services, its log and its saved progress. */
interface MigrationContext {
  db: Db;
  deps: Deps;
  services: Services;
  log: Logger;
  /** The progress this migration saved before a crash (undefined on a first attempt). */
  checkpoint: unknown;
  /** Records progress (any JSON value), so that a start after a crash resumes from it; also renews the lease. */
  save(checkpoint: unknown): Promise<void>;
}

/**
 * One step of the data format: it turns data of version `to - 1` into version `to`. It must be
 * idempotent (a crash may end it anywhere, and it runs again from its last checkpoint) and bounded
 * in memory (read in batches).
 */
export interface Migration {
  to: number;
  name: string;
  run(ctx: MigrationContext): Promise<void>;
}
