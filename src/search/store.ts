import type { KnowledgeDocument, MemoryRecord as Memory } from '../knowledge/index.js';
import type { MeetingDoc } from '../meetings/index.js';
import type { NeuronDoc } from '../neurons/index.js';
import type { PathwayHead } from '../pathways/index.js';
import type { ActionPlanDoc, ReceptorDoc } from '../receptors/index.js';
import type { ReflexDoc } from '../reflexes/index.js';
import type { StakeholderMapDoc } from '../stakeholders/index.js';

/**
 * What the search index reads of the store (docs/search.md, What is indexed), in domain terms:
 * every searchable resource of every area, decoded, in bulk, and the syncer's lease.
 * store.mongo.ts is the MongoDB and FerretDB adapter.
 */

type Json = Record<string, unknown>;

/** One resource the index is asked to re-read: its workspace and id. */
export interface ResourceKey {
  workspaceId: string;
  id: string;
}

/** A chunk of a resource's text as the index holds it: its vector decoded. */
export interface SearchChunk {
  id: string;
  workspaceId: string;
  resourceId: string;
  version: number;
  index: number;
  text: string;
  vector: Float32Array | null;
  vectorModel: string | null;
}

export type NeuronRecord = Omit<NeuronDoc, 'config'> & { config: Json };
export type ReceptorRecord = Omit<ReceptorDoc, 'config'> & { config: Json };
export type MeetingRecord = Omit<MeetingDoc, 'body'> & { body: Json };
export interface ActionPlanRecord {
  plan: Omit<ActionPlanDoc, 'input'> & { input: unknown };
  /** The plan's pathway and receptor when they exist in its workspace. */
  pathwayName: string | null;
  receptorSlug: string | null;
}
export interface StakeholderMapRecord {
  map: StakeholderMapDoc;
  /** The names of its stakeholders. */
  people: string[];
}
export interface ChunkedRecord<D> {
  doc: D;
  /** Chunks of every stored version of the resource. */
  chunks: SearchChunk[];
}

/** The records of one kind: re-read by key (those gone or not searchable left out), or walked page by page. */
export interface SearchReader<R> {
  loadMany(keys: ResourceKey[]): Promise<Map<string, R>>;
  all(): AsyncIterable<R[]>;
}

/** The search syncer's lease: one syncer per index, a hold keyed by the index it writes. */
interface SyncLease {
  /** Takes the lease for `leaseMs` unless another owner holds it; true when taken. */
  take(key: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Extends the lease while this owner holds it; false when it was lost. */
  renew(key: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Gives the lease up (only this owner's). */
  release(key: string, owner: string): Promise<void>;
}

/** Every searchable kind's reader, and the syncer's lease. */
export interface SearchSources {
  syncLease: SyncLease;
  neurons: SearchReader<NeuronRecord>;
  pathways: SearchReader<PathwayHead>;
  receptors: SearchReader<ReceptorRecord>;
  reflexes: SearchReader<ReflexDoc>;
  actionPlans: SearchReader<ActionPlanRecord>;
  meetings: SearchReader<MeetingRecord>;
  stakeholderMaps: SearchReader<StakeholderMapRecord>;
  assets: SearchReader<ChunkedRecord<KnowledgeDocument>>;
  artifacts: SearchReader<ChunkedRecord<KnowledgeDocument>>;
  memories: SearchReader<ChunkedRecord<Memory>>;
}
