import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import { claim } from './claims.js';
import { findById } from './client.js';
import { page, pageIndexes, type PageQuery, type PageSort } from './paging.js';

export type NeuronScopeValue = 'brain' | 'workspace' | 'core';

/**
 * The head of a neuron. `config` is the normalized neuron_config as a blob (stored through
 * src/db/codec.ts); `version` is the head version number, and every change writes a matching
 * neuron_versions entry.
 */
export interface NeuronDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  name: string;
  description: string;
  config: Blob;
  isActive: boolean;
  scope: NeuronScopeValue;
  version: number;
  deletedAt: Date | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One recorded version; the natural `_id` (`neuronId:version`) makes a retried write idempotent. */
export interface NeuronVersionDoc {
  _id: string;
  neuronId: string;
  workspaceId: string;
  version: number;
  snapshot: Blob;
  createdAt: Date;
  createdBy: string | null;
  note?: string;
}

export const neuronIndexes: IndexSpec[] = [
  { collection: 'neurons', keys: { workspaceId: 1, brainId: 1, name: 1 }, unique: true, name: 'ws_brain_name_unique' },
  { collection: 'neurons', keys: { workspaceId: 1, scope: 1 }, name: 'ws_scope' },
  // GET /v1/neurons pages by (sort field, _id); visibility and search are checked on the workspace's rows read in that order.
  ...pageIndexes('neurons', ['workspaceId'], ['createdAt', 'updatedAt', 'name']),
  { collection: 'neuron_versions', keys: { neuronId: 1, version: -1 }, name: 'neuron_version' },
];

/** Neuron heads and their versions; every query filters by workspace. */
export function createNeuronRepo(db: Db) {
  const neurons = db.collection<NeuronDoc>('neurons');
  const versions = db.collection<NeuronVersionDoc>('neuron_versions');
  return {
    neurons,
    versions,
    findById: (workspaceId: string, id: string) => findById(neurons, id, { workspaceId }),
    list: (filter: Filter<NeuronDoc> & { workspaceId: string }, sort: PageSort, q: PageQuery) =>
      page(neurons, filter, sort, q),
    findVersion: (workspaceId: string, neuronId: string, version: number) =>
      findById(versions, `${neuronId}:${version}`, { workspaceId }),
    listVersions: (workspaceId: string, neuronId: string) =>
      versions.find({ workspaceId, neuronId }).sort({ version: -1 }).toArray(),
    /** Idempotent: a version that already exists (a retried write) is left as it was. */
    async recordVersion(doc: NeuronVersionDoc): Promise<void> {
      await claim(versions, doc);
    },
  };
}
export type NeuronRepo = ReturnType<typeof createNeuronRepo>;
