import type { Db } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';

export type ReceptorTargetKind = 'neuron' | 'pathway' | 'action_plan' | 'plasticity_pass' | 'system_job';

/** What a receptor dispatches when it fires. */
export interface ExecutableTarget { kind: ReceptorTargetKind; id: string | null; autoExecute?: boolean }

/**
 * A trigger that listens on channels and dispatches its target (document 1, Receptor).
 * For neuron and pathway targets, `isActive` and `scope` mirror the target.
 */
export interface ReceptorDoc {
  _id: string; workspaceId: string; brainId: string; slug: string; activeChannels: string[]; config: Blob;
  isActive: boolean; scope: 'brain' | 'workspace' | 'core'; sourceConfig: Blob; executableTarget: ExecutableTarget;
  sensoryReflexId: string | null; createdAt: Date; updatedAt: Date;
}

export const receptorIndexes: IndexSpec[] = [
  { collection: 'receptors', keys: { workspaceId: 1, slug: 1 }, unique: true, name: 'ws_slug_unique' },
  { collection: 'receptors', keys: { workspaceId: 1, 'executableTarget.kind': 1, 'executableTarget.id': 1 }, name: 'ws_target' },
];

/** Receptor storage; every query filters by workspace. */
export function createReceptorRepo(db: Db) {
  const receptors = db.collection<ReceptorDoc>('receptors');
  return {
    receptors,
    findById: (workspaceId: string, id: string) => receptors.findOne({ _id: id, workspaceId }),
    findBySlug: (workspaceId: string, slug: string) => receptors.findOne({ workspaceId, slug }),
    forTarget: (workspaceId: string, kind: ReceptorTargetKind, id: string) =>
      receptors.findOne({ workspaceId, 'executableTarget.kind': kind, 'executableTarget.id': id }),
  };
}
export type ReceptorRepo = ReturnType<typeof createReceptorRepo>;
