import type { JobState } from '../temporal/definitions.js';

/** A job as the start-up reconcile looks at it: enough to find its workflow and to end it. */
export interface OpenJob {
  id: string;
  workspaceId: string;
  status: JobState;
  receptorId: string | null;
  createdAt: Date;
}

/** A job the store holds for a running workflow's id (null: none). */
export interface KnownJob {
  workspaceId: string;
  status: JobState;
  finishedAt: Date | null;
}

/** What the reconcile reads from the store (src/reconcile/store.mongo.ts is the MongoDB adapter). */
export interface ReconcileStore {
  /** Up to `limit` jobs that have not ended (pending, running, waiting, paused), oldest first per workspace. */
  openJobs(limit: number): Promise<OpenJob[]>;
  /** The stored jobs among `ids`, by id. */
  jobsByIds(ids: string[]): Promise<Map<string, KnownJob>>;
}
