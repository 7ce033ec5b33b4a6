import type { Db } from 'mongodb';
import type { JobDoc } from '../jobs/index.js';
import type { JobState } from '../temporal/definitions.js';
import type { KnownJob, OpenJob, ReconcileStore } from './store.js';

/** The states a job has not ended in (TERMINAL_STATES are completed and failed). */
const OPEN_STATES: JobState[] = ['pending', 'running', 'waiting', 'paused'];

/**
 * The MongoDB adapter of the reconcile's reads. Open jobs are read per workspace and state, so each
 * query is an equality prefix of the jobs' (workspaceId, status, createdAt) page index (src/jobs/store.mongo.ts):
 * no scan of the whole collection, which FerretDB would do for a `$in` over every workspace.
 */
export function createReconcileStore(db: Db): ReconcileStore {
  const jobs = db.collection<JobDoc>('jobs');
  const workspaces = db.collection<{ _id: string }>('workspaces');
  return {
    async openJobs(limit) {
      const out: OpenJob[] = [];
      for await (const ws of workspaces.find({}, { projection: { _id: 1 } })) {
        for (const status of OPEN_STATES) {
          if (out.length >= limit) return out;
          const docs = await jobs
            .find(
              // A run waiting in its workspace's queue has no workflow on purpose: the queue holds its start.
              { workspaceId: ws._id, status, queued: { $ne: true } },
              { projection: { _id: 1, workspaceId: 1, status: 1, receptorId: 1, createdAt: 1 } },
            )
            .sort({ createdAt: 1, _id: 1 })
            .limit(limit - out.length)
            .toArray();
          for (const d of docs)
            out.push({
              id: d._id,
              workspaceId: d.workspaceId,
              status: d.status,
              receptorId: d.receptorId ?? null,
              createdAt: d.createdAt,
            });
        }
      }
      return out;
    },
    async jobsByIds(ids) {
      const found = new Map<string, KnownJob>();
      if (!ids.length) return found;
      const docs = await jobs
        .find({ _id: { $in: ids } }, { projection: { _id: 1, workspaceId: 1, status: 1, finishedAt: 1 } })
        .toArray();
      for (const d of docs)
        found.set(d._id, { workspaceId: d.workspaceId, status: d.status, finishedAt: d.finishedAt });
      return found;
    },
  };
}
