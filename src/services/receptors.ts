import { randomUUID } from 'node:crypto';
import { encodeBlob } from '../db/codec.js';
import type { NeuronDoc } from '../db/neurons.js';
import type { ReceptorDoc, ReceptorRepo, ReceptorTargetKind } from '../db/receptors.js';
import type { Scope } from '../scope.js';
import { isDuplicateKey } from '../db/claims.js';

/** Slug attempts before giving up on a free `-N` suffix (a workspace never holds that many same-named targets). */
const MAX_SLUG_ATTEMPTS = 100;

/**
 * Receptors: for now, the trigger that is created with every neuron and kept in step with it
 * (document 1, Receptor: is_active and scope mirror the target). Receptor routes come later.
 */
export function createReceptorService({ repo }: { repo: ReceptorRepo }) {
  /** First free slug in the workspace: `base`, then `base-2`, `base-3`, … */
  async function insertWithFreeSlug(doc: Omit<ReceptorDoc, 'slug'>, base: string): Promise<ReceptorDoc> {
    for (let n = 1; n <= MAX_SLUG_ATTEMPTS; n++) {
      const slug = n === 1 ? base : `${base}-${n}`;
      if (await repo.findBySlug(doc.workspaceId, slug)) continue;
      const full: ReceptorDoc = { ...doc, slug };
      try {
        await repo.receptors.insertOne(full);
        return full;
      } catch (e) {
        // Another insert took the slug between the check and the write: try the next one.
        if (!isDuplicateKey(e)) throw e;
      }
    }
    throw new Error(`no free receptor slug for ${base}`);
  }

  return {
    /** The receptor that dispatches this target, or null. */
    forTarget: (scope: Scope, kind: ReceptorTargetKind, id: string): Promise<ReceptorDoc | null> =>
      repo.forTarget(scope.workspaceId, kind, id),

    /**
     * Creates the receptor trigger of a new neuron (idempotent: an existing one is returned).
     * Its slug is the neuron name, suffixed `-2`, `-3`… when another receptor of the workspace has it.
     */
    async ensureForNeuron(scope: Scope, neuron: NeuronDoc): Promise<ReceptorDoc> {
      const existing = await repo.forTarget(scope.workspaceId, 'neuron', neuron._id);
      if (existing) return existing;
      const now = new Date();
      return insertWithFreeSlug({
        _id: randomUUID(), workspaceId: scope.workspaceId, brainId: neuron.brainId, activeChannels: ['http'],
        config: encodeBlob({}), isActive: neuron.isActive && !neuron.deletedAt, scope: neuron.scope, sourceConfig: encodeBlob({}),
        executableTarget: { kind: 'neuron', id: neuron._id }, sensoryReflexId: null, createdAt: now, updatedAt: now,
      }, neuron.name);
    },

    /** Mirrors the target's scope and activity onto its receptor (a soft-deleted target reads as inactive). */
    async syncWithNeuron(scope: Scope, neuron: NeuronDoc): Promise<void> {
      await repo.receptors.updateOne(
        { workspaceId: scope.workspaceId, 'executableTarget.kind': 'neuron', 'executableTarget.id': neuron._id },
        { $set: { scope: neuron.scope, isActive: neuron.isActive && !neuron.deletedAt, updatedAt: new Date() } },
      );
    },

    /** Removes the receptor(s) of a target that is being removed. */
    async deleteForTarget(scope: Scope, kind: ReceptorTargetKind, id: string): Promise<void> {
      await repo.receptors.deleteMany({ workspaceId: scope.workspaceId, 'executableTarget.kind': kind, 'executableTarget.id': id });
    },
  };
}
export type ReceptorService = ReturnType<typeof createReceptorService>;
