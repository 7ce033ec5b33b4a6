import type { Db } from 'mongodb';
import { findById } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import type { PathwayTrailDoc, TrailVisit } from './model.js';
import type { PathwayTrailStore } from './store.js';

/** The pathway trail store on MongoDB (and FerretDB): one document per job, its visits one blob. */
export function createPathwayTrailRepo(db: Db): PathwayTrailStore {
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
