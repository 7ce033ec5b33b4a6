/**
 * The neuron model: a neuron's head and its recorded versions, stored and decoded, and the
 * point-in-time body of a head. store.ts (the contract) and store.mongo.ts (the adapter) import it.
 */
import type { Scope } from '../kernel/scope.js';
import type { Blob } from '../kernel/store/codec.js';
import type { NeuronConfig, NeuronSnapshot } from './config-schemas.js';

type NeuronScopeValue = 'brain' | 'workspace' | 'core';

/**
 * The head of a neuron. `config` is the normalized neuron_config as a blob (stored through
 * src/kernel/store/codec.ts); `version` is the head version number, and every change writes a matching
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

/** A neuron head as the repository returns it: the config decoded. */
export type Neuron = Omit<NeuronDoc, 'config'> & { config: NeuronConfig };
/** A recorded version as the repository returns it: the snapshot decoded (null when unreadable). */
export type NeuronVersion = Omit<NeuronVersionDoc, 'snapshot'> & { snapshot: NeuronSnapshot | null };
/** The fields a change may set (a version is recorded for it). */
export type NeuronChange = Partial<
  Pick<Neuron, 'name' | 'description' | 'config' | 'isActive' | 'scope' | 'deletedAt'>
>;

/** The point-in-time body of a head (what a run executes when no version is pinned). */
export function snapshotOf(n: Neuron): NeuronSnapshot {
  return {
    id: n._id,
    version: n.version,
    name: n.name,
    description: n.description ?? '',
    brainId: n.brainId,
    neuron_config: n.config,
    is_active: n.isActive,
    scope: n.scope,
  };
}

// The neurons area's entries in the kernel's event map (src/kernel/events.ts).
declare module '../kernel/events.js' {
  interface Events {
    /** A neuron was created (its reflex links and receptor follow it). */
    'neuron.created': { scope: Scope; neuron: Neuron };
    /** A neuron's head changed: a new version, a soft delete, a restore (its receptor mirrors activity and scope). */
    'neuron.changed': { scope: Scope; neuron: Neuron };
    /** A neuron is being removed: what refers to it goes first, in this order (its reflex links, then its receptors). */
    'neuron.removing': { scope: Scope; neuronId: string };
  }
}
