import type { Db } from 'mongodb';
import { findById } from '../kernel/store/client.js';
import { traceKey } from '../traces/index.js';
import type { OwnerStore } from './store.js';

/**
 * The owners a memory may name (a neuron or a trace of the workspace). Read here, by the knowledge
 * area, so the memory service needs no other area's repository for its one existence check.
 */
export function createOwnerReads(db: Db): OwnerStore {
  const neurons = db.collection<{ _id: string; workspaceId: string }>('neurons');
  const traces = db.collection<{ _id: string; workspaceId: string; traceId: string }>('traces');
  return {
    /** Whether the workspace has this neuron (by key) or this trace (by its key, else by its trace id). */
    async exists(workspaceId: string, type: 'neuron' | 'trace', id: string): Promise<boolean> {
      if (type === 'neuron') return !!(await findById(neurons, id, { workspaceId }, { projection: { _id: 1 } }));
      const found =
        (await findById(traces, traceKey(workspaceId, id), { workspaceId, traceId: id }, { projection: { _id: 1 } })) ??
        (await traces.findOne({ workspaceId, traceId: id }, { projection: { _id: 1 } }));
      return !!found;
    },
  };
}
