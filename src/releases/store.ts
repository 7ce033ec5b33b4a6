import type { DataFormatRecord } from './model.js';

/** The store contract of the releases area: the data-format record and the upgrade lease. */
export interface ReleaseStore {
  /** The record, or null on a store that has none (a fresh one, or one written by release 0.1.0). */
  record(): Promise<DataFormatRecord | null>;
  /** A migration starts (or resumes): `migrating` is set, the version unchanged. */
  startMigration(m: NonNullable<DataFormatRecord['migrating']>, release: string): Promise<void>;
  /** Saves the running migration's progress. */
  saveCheckpoint(to: number, checkpoint: unknown): Promise<void>;
  /** The migration to `to` is done: the version moves to it and `migrating` goes. */
  finishMigration(entry: DataFormatRecord['history'][number]): Promise<void>;
  /** Records the version (a store already at it, or a fresh one) and the release now running on it. */
  stamp(version: number, release: string): Promise<void>;
  /** Takes the lease if it is free or expired; false when a live holder has it. */
  tryLease(owner: string, ms: number): Promise<boolean>;
  /** Extends the holder's lease; false when it is no longer the holder. */
  renewLease(owner: string, ms: number): Promise<boolean>;
  /** Gives the lease back (only the holder's). */
  releaseLease(owner: string): Promise<void>;
  /** Who holds the lease and until when (for the log of a process that waits). */
  lease(): Promise<{ owner: string; expiresAt: Date } | null>;
}
