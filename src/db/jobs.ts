import type { Db, Filter } from 'mongodb';
import type { JobKind, JobState } from '../temporal/definitions.js';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import { page, pageIndexes, type PageQuery } from './paging.js';

/**
 * The jobs read model: one document per workflow, id = workflow id. Activities
 * update it at status transitions; lists, filters and totals read it instead of Temporal.
 */
export interface JobDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  kind: JobKind;
  status: JobState;
  progress: number;
  currentStep: string | null;
  failedReason: string | null;
  result: Blob | null;
  waitingFor: Blob | null;
  neuronId: string | null;
  pathwayId: string | null;
  receptorId: string | null;
  traceId: string | null;
  parentJobId: string | null;
  clientNonce: string | null;
  createdBy: string | null;
  /** Set on jobs started through a share link (its request budget counts them). */
  shareTokenId?: string;
  /** When the job first left `pending` (unset until then; jobs recorded before 2026-11 carry null). */
  createdAt: Date;
  processedAt?: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
}

export const TERMINAL_STATES: JobState[] = ['completed', 'failed'];

export const jobIndexes: IndexSpec[] = [
  // GET /v1/jobs pages by (createdAt, _id) under the workspace and at most one of these equalities (src/db/paging.ts).
  ...pageIndexes('jobs', ['workspaceId'], ['createdAt']),
  ...(['status', 'pathwayId', 'receptorId', 'neuronId'] as const).flatMap((f) =>
    pageIndexes('jobs', ['workspaceId', f], ['createdAt']),
  ),
  { collection: 'jobs', keys: { parentJobId: 1 }, name: 'parent' },
  { collection: 'jobs', keys: { workspaceId: 1, shareTokenId: 1 }, name: 'ws_share' },
];

/** A job's claimed terminal state (src/db/claims.ts): `_id` `job:<id>:terminal`, the transition it applied. */
export interface JobClaimDoc {
  _id: string;
  workspaceId: string;
  set: Partial<JobDoc>;
}

export function createJobRepo(db: Db) {
  const jobs = db.collection<JobDoc>('jobs');
  const claims = db.collection<JobClaimDoc>('job_claims');
  return {
    jobs,
    claims,
    /**
     * One job of a workspace. Looked up by `_id` alone and checked here: FerretDB's SQLite backend
     * serves an `_id`-only filter from its primary key and scans the collection for any other.
     */
    find: (workspaceId: string, id: string) =>
      jobs.findOne({ _id: id }).then((j) => (j?.workspaceId === workspaceId ? j : null)),
    /** A page of the workspace's jobs, newest first (`filter` holds the workspace). */
    list: (filter: Filter<JobDoc> & { workspaceId: string }, q: PageQuery) =>
      page(jobs, filter, { field: 'createdAt', dir: -1 }, q),
  };
}
export type JobRepo = ReturnType<typeof createJobRepo>;
