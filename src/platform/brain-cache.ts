import { KEY_CACHE_MS } from './auth.js';
import type { BrainDoc } from './model.js';
import type { WorkspaceStore } from './store.js';

/**
 * How long a process trusts a brain it found without a read: the bound of a verified key's (and a
 * live workspace's), on which the safety of this memory rests (see withBrainCache).
 */
const BRAIN_CACHE_MS = KEY_CACHE_MS;
const MAX_ENTRIES = 10_000;

/**
 * The workspace store with this process's short memory of the brains it found. Nearly every request
 * names its brain (`X-Brain-Id`), and each one read it from the store: 36 reads a second under bench
 * (n)'s load. A brain is never changed once made and goes only with its workspace, whose credentials
 * every process stops accepting within the same 5 s (src/platform/auth.ts), so a brain remembered
 * that long is never one a caller could no longer reach. Only brains found are remembered: one that
 * is missing is asked again, so a brain made on another process is found at once.
 */
export function withBrainCache(store: WorkspaceStore, ms = BRAIN_CACHE_MS): WorkspaceStore {
  const found = new Map<string, { brain: BrainDoc; until: number }>();
  return {
    ...store,
    async findBrain(workspaceId: string, id: string): Promise<BrainDoc | null> {
      const key = `${workspaceId}\u0000${id}`;
      const now = Date.now();
      const hit = found.get(key);
      if (hit && hit.until > now) return { ...hit.brain };
      const brain = await store.findBrain(workspaceId, id);
      if (!brain) {
        found.delete(key);
        return null;
      }
      if (found.size >= MAX_ENTRIES) found.clear();
      found.set(key, { brain: { ...brain }, until: now + ms });
      return brain;
    },
  };
}
