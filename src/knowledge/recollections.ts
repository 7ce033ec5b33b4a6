import { randomUUID } from 'node:crypto';
import type { ChunkedKind, Recollection } from './model.js';
import type { KnowledgeStore } from './store.js';
import type { ResourceEvents } from '../platform/index.js';
import { notFound, validationError } from '../kernel/errors.js';
import type { Scope } from '../kernel/scope.js';

/** What the recollection steps use of the memory service: the store, the event stream and its check of a brain. */
interface RecollectionDeps {
  d: { repo: KnowledgeStore; events: ResourceEvents };
  brainFor: (scope: Scope, brainId?: string) => Promise<string>;
}

/** What both groups share: the memory service's part above and the read of one recollection of the caller's brain. */
interface RecollectionContext extends RecollectionDeps {
  getRecollection: (scope: Scope, id: string) => Promise<Recollection>;
}

const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;

/**
 * Recollections (docs/knowledge.md, "Memories and recollections"), part of the memory service: groups of
 * a brain's resources (memories, assets, artifacts) by explicit membership, and the stats counted from them.
 */
export function createRecollectionSteps(deps: RecollectionDeps) {
  const { repo } = deps.d;
  async function getRecollection(scope: Scope, id: string): Promise<Recollection> {
    const r = await repo.recollections.get(scope.workspaceId, id);
    if (!r || (scope.brainId && r.brainId !== scope.brainId)) throw notFound('Recollection');
    return r;
  }
  const ctx: RecollectionContext = { ...deps, getRecollection };
  return {
    getRecollection,
    ...createRecollectionReads(ctx), // listRecollections, members, stats
    ...createRecollectionWrites(ctx), // createRecollection, join, resolveMembers, updateRecollection, removeRecollection
  };
}

/** Reads: a page of recollections, one's members, and its stats counted from the rows. */
function createRecollectionReads(ctx: RecollectionContext) {
  const { d, getRecollection } = ctx;
  const { repo } = d;
  return {
    async listRecollections(scope: Scope, q: { limit: number; offset: number; cursor?: string; brain_id?: string }) {
      return repo.recollections.page(scope.workspaceId, q.brain_id ?? scope.brainId, q);
    },
    async members(scope: Scope, id: string) {
      const r = await getRecollection(scope, id);
      return repo.recollections.members(scope.workspaceId, r._id);
    },
    /**
     * Counted from the stored rows on each read: members that still exist in the recollection's
     * brain, their chunks, and those chunks that carry a vector (the embedding lane).
     */
    async stats(scope: Scope, id: string) {
      const r = await getRecollection(scope, id);
      const ids = await repo.recollections.memberIds(scope.workspaceId, r._id);
      const [mems, docs, chunks] = await Promise.all([
        repo.memories.countIn(scope.workspaceId, r.brainId, ids),
        repo.documents.countIn(scope.workspaceId, r.brainId, ids),
        repo.chunks.countIn(scope.workspaceId, r.brainId, ids),
      ]);
      return {
        resource_count: mems + docs,
        chunk_count: chunks.chunkCount,
        embedding_lane_chunk_row_count: chunks.embeddedCount,
      };
    },
  };
}

/** Writes: a recollection made, renamed or removed, and its members added and removed (checked against its brain). */
function createRecollectionWrites(ctx: RecollectionContext) {
  const { d, brainFor, getRecollection } = ctx;
  const { repo } = d;
  return {
    async createRecollection(
      scope: Scope,
      b: { name: string; description?: string; resource_ids?: string[]; brain_id?: string },
    ) {
      const brainId = await brainFor(scope, b.brain_id);
      const now = new Date();
      const r: Recollection = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        name: b.name,
        description: b.description ?? null,
        createdBy: by(scope),
        createdAt: now,
        updatedAt: now,
      };
      // Members are checked before anything is written: a refused create leaves nothing behind.
      if (b.resource_ids?.length)
        await this.resolveMembers(
          scope,
          brainId,
          b.resource_ids.map((x) => x.toLowerCase()),
        );
      await repo.recollections.insert(r);
      if (b.resource_ids?.length) await this.join(scope, r, b.resource_ids, []);
      await d.events.emit(scope.workspaceId, 'created', {
        kind: 'recollection',
        id: r._id,
        brain_id: r.brainId,
        name: r.name,
      });
      return r;
    },
    /** Adds and removes members: resources of the recollection's brain (memories, assets, artifacts), by id. */
    async join(scope: Scope, r: Recollection, add: string[], remove: string[]) {
      const ids = [...new Set(add.map((x) => x.toLowerCase()))];
      const kinds = await this.resolveMembers(scope, r.brainId, ids);
      await repo.recollections.addMembers(
        scope.workspaceId,
        r._id,
        new Map(ids.map((id) => [id, kinds.get(id)!])),
        new Date(),
      );
      await repo.recollections.removeMembers(
        scope.workspaceId,
        r._id,
        remove.map((x) => x.toLowerCase()),
      );
    },
    /** The kind of each id, or a 400 naming those that are no memory, asset or artifact of the brain. */
    async resolveMembers(scope: Scope, brainId: string, ids: string[]): Promise<Map<string, ChunkedKind>> {
      const [mems, docs] = await Promise.all([
        repo.memories.idsIn(scope.workspaceId, brainId, ids),
        repo.documents.lanesIn(scope.workspaceId, brainId, ids),
      ]);
      const kinds = new Map<string, ChunkedKind>([
        ...mems.map((id) => [id, 'memory'] as const),
        ...docs.map((x) => [x.id, x.lane] as const),
      ]);
      const missing = ids.filter((i) => !kinds.has(i));
      if (missing.length)
        throw validationError(
          `resource_ids: ${missing.slice(0, 5).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not a memory, asset or artifact of this recollection's brain`,
        );
      return kinds;
    },
    async updateRecollection(
      scope: Scope,
      id: string,
      b: {
        name?: string;
        description?: string | null;
        resource_ids?: string[];
        add_resource_ids?: string[];
        remove_resource_ids?: string[];
      },
    ) {
      const r = await getRecollection(scope, id);
      if (b.resource_ids) {
        const keep = new Set(b.resource_ids.map((x) => x.toLowerCase()));
        const current = await repo.recollections.memberIds(scope.workspaceId, r._id);
        await this.join(
          scope,
          r,
          [...keep],
          current.filter((m) => !keep.has(m)),
        );
      }
      if (b.add_resource_ids?.length || b.remove_resource_ids?.length)
        await this.join(scope, r, b.add_resource_ids ?? [], b.remove_resource_ids ?? []);
      const set: Partial<Recollection> = { updatedAt: new Date() };
      if (b.name !== undefined) set.name = b.name;
      if (b.description !== undefined) set.description = b.description;
      await repo.recollections.update(scope.workspaceId, r._id, set);
      const next = { ...r, ...set };
      await d.events.emit(scope.workspaceId, 'updated', {
        kind: 'recollection',
        id: r._id,
        brain_id: r.brainId,
        name: next.name,
      });
      return next;
    },
    async removeRecollection(scope: Scope, id: string) {
      const r = await getRecollection(scope, id);
      await repo.recollections.remove(scope.workspaceId, r._id);
      await d.events.emit(scope.workspaceId, 'deleted', {
        kind: 'recollection',
        id: r._id,
        brain_id: r.brainId,
        name: r.name,
      });
    },
  };
}
