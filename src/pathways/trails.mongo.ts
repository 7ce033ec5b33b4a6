import type { Db } from 'mongodb';
import { findById } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob, type Blob } from '../kernel/store/codec.js';

/** One node visit of a pathway run, in visiting order: the node (its index), its value and the handle it took. */
export interface TrailVisit {
  at: number;
  value: unknown;
  handle?: string;
  /** The visit had not ended when the run did. */
  pending?: boolean;
}

/**
 * What a pathway run recorded of its node visits when it ended (completed, failed or cancelled):
 * the values a replay (POST /v1/jobs/:id/replay) takes instead of running those nodes again.
 * One document per job, `_id` the job id; its values are free-form JSON, so stored as one blob.
 */
interface PathwayTrailDoc {
  _id: string;
  workspaceId: string;
  visits: Blob;
  createdAt: Date;
}

export function createPathwayTrailRepo(db: Db) {
  const trails = db.collection<PathwayTrailDoc>('pathway_trails');
  return {
    /** Records the run's visits (a retried activity writes the same document again). */
    async put(workspaceId: string, jobId: string, visits: TrailVisit[]): Promise<void> {
      await trails.replaceOne(
        { _id: jobId, workspaceId },
        { workspaceId, visits: encodeBlob(visits), createdAt: new Date() },
        { upsert: true },
      );
    },
    /** The run's visits, or null when it recorded none (a run that has not ended, or ended before trails). */
    async get(workspaceId: string, jobId: string): Promise<TrailVisit[] | null> {
      const doc = await findById(trails, jobId, { workspaceId });
      return doc ? decodeBlob<TrailVisit[] | null>(doc.visits, null) : null;
    },
  };
}
export type PathwayTrailRepo = ReturnType<typeof createPathwayTrailRepo>;
