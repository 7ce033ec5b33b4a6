import type { Db } from 'mongodb';
import type { IndexSpec } from './client.js';
import { createJobRepo, jobIndexes } from './jobs.js';
import { createTraceRepo, traceIndexes } from './traces.js';
import { createWorkspaceRepo, workspaceIndexes } from './workspaces.js';

/** Every index the platform's query paths need; created at start-up by ensureIndexes. */
export const allIndexes: IndexSpec[] = [...workspaceIndexes, ...traceIndexes, ...jobIndexes];

/** All repositories, built over one Db. */
export function createRepos(db: Db) {
  return { workspaces: createWorkspaceRepo(db), traces: createTraceRepo(db), jobs: createJobRepo(db) };
}
export type Repos = ReturnType<typeof createRepos>;
