import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import { findById } from './client.js';
import { page, pageIndexes, type PageQuery, type PageSort } from './paging.js';

/** One integration and the tools of it the reflex exposes. */
export interface ReflexToolSet {
  integrationId: string;
  tools: string[];
}

/** A reusable bundle of tools attached to neurons (docs/tools.md). `metadata` is client JSON (a blob). */
export interface ReflexDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  name: string;
  type: 'sensory' | 'effector';
  description: string;
  tools: ReflexToolSet[];
  metadata: Blob;
  isActive: boolean;
  scope: 'brain' | 'workspace' | 'core';
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A neuron–reflex assignment; the natural `_id` (`neuronId:reflexId`) makes a second assignment a duplicate key. */
export interface NeuronReflexDoc {
  _id: string;
  workspaceId: string;
  neuronId: string;
  reflexId: string;
  createdBy: string | null;
  createdAt: Date;
}

export const reflexIndexes: IndexSpec[] = [
  // GET /v1/reflexes pages by (sort field, _id), with or without ?type; visibility and search are checked on the rows read in that order.
  ...pageIndexes('reflexes', ['workspaceId'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('reflexes', ['workspaceId', 'type'], ['createdAt', 'updatedAt', 'name']),
  { collection: 'neuron_reflexes', keys: { neuronId: 1, reflexId: 1 }, unique: true, name: 'neuron_reflex_unique' },
  { collection: 'neuron_reflexes', keys: { workspaceId: 1, reflexId: 1 }, name: 'ws_reflex' },
];

/** Reflexes and neuron–reflex links; every query filters by workspace. */
export function createReflexRepo(db: Db) {
  const reflexes = db.collection<ReflexDoc>('reflexes');
  const links = db.collection<NeuronReflexDoc>('neuron_reflexes');
  return {
    reflexes,
    links,
    findById: (workspaceId: string, id: string) => findById(reflexes, id, { workspaceId }),
    list: (filter: Filter<ReflexDoc> & { workspaceId: string }, sort: PageSort, q: PageQuery) =>
      page(reflexes, filter, sort, q),
    linksOfNeuron: (workspaceId: string, neuronId: string) =>
      links.find({ workspaceId, neuronId }).sort({ createdAt: 1, _id: 1 }).toArray(),
    /** Drops every link of a neuron (the neuron is being removed). */
    unlinkNeuron: (workspaceId: string, neuronId: string) => links.deleteMany({ workspaceId, neuronId }),
    /** Drops every link of a reflex (the reflex is being removed). */
    unlinkReflex: (workspaceId: string, reflexId: string) => links.deleteMany({ workspaceId, reflexId }),
  };
}
export type ReflexRepo = ReturnType<typeof createReflexRepo>;
