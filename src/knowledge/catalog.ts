import type { KnowledgeStore } from './store.js';
import { forbidden, validationError } from '../kernel/errors.js';
import { hasRole, type Scope } from '../kernel/scope.js';
import { folderStructure, normalizePath, type DocumentService } from './documents.js';
import type { MemoryService } from './memories.js';
import type { ResourceEvents } from '../platform/index.js';
import type { SkillService } from '../skills/index.js';

export type TreeProfile = 'document' | 'broad';
interface TreeRow {
  id: string;
  kind: string;
  name: string;
  path: string;
  brain_id: string;
  updated_at: string;
}

/**
 * The folder view over the workspace's knowledge (docs/knowledge.md, Folders):
 * - tree_profile `document` (default): assets and artifacts of the brain, by folder path;
 * - tree_profile `broad`: also memories (folder `memories`) and skills (their `skills/<slug>` path).
 * Moves change folder paths: `document` moves within the caller's brain; `broad` (admins only)
 * moves rows of any brain of the workspace.
 */
export function createCatalogService(d: {
  repo: KnowledgeStore;
  documents: DocumentService;
  memories: MemoryService;
  skills: SkillService;
  events: ResourceEvents;
}) {
  const { repo } = d;
  return {
    async tree(scope: Scope, q: { tree_profile: TreeProfile; path_prefix?: string; brain_id?: string; limit: number }) {
      const prefix = normalizePath(q.path_prefix);
      const brain = q.brain_id ?? scope.brainId;
      const docs = await repo.documents.tree(scope.workspaceId, { brainId: brain, pathPrefix: prefix }, q.limit);
      const rows: TreeRow[] = docs.map((r) => ({
        id: r._id,
        kind: r.lane,
        name: r.name,
        path: r.path,
        brain_id: r.brainId,
        updated_at: r.updatedAt.toISOString(),
      }));
      if (q.tree_profile === 'broad') {
        const inPrefix = (p: string) => !prefix || p === prefix || p.startsWith(`${prefix}/`);
        if (inPrefix('memories')) {
          const mems = await repo.memories.byName(scope.workspaceId, brain, q.limit);
          rows.push(
            ...mems.map((m) => ({
              id: m._id,
              kind: 'memory',
              name: m.name,
              path: 'memories',
              brain_id: m.brainId,
              updated_at: m.updatedAt.toISOString(),
            })),
          );
        }
        const skills = await d.skills.list(scope, {
          brain_id: brain,
          sortBy: 'name',
          sortDirection: 'asc',
          limit: Math.min(q.limit, 200),
          offset: 0,
        });
        for (const s of skills.items) {
          const folder = s.skillPath.split('/').slice(0, -1).join('/');
          if (inPrefix(folder))
            rows.push({
              id: s._id,
              kind: 'skill',
              name: s.name,
              path: folder,
              brain_id: s.brainId,
              updated_at: s.updatedAt.toISOString(),
            });
        }
      }
      const shape = folderStructure(
        rows.map((r) => ({ _id: r.id, name: r.name, path: r.path })),
        prefix,
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      return {
        profile: q.tree_profile,
        path: prefix,
        folders: shape.folders,
        items: shape.items.map((i) => byId.get(i.id)!),
        rows,
        total: rows.length,
        truncated: docs.length >= q.limit,
      };
    },

    async move(scope: Scope, b: { move_profile: TreeProfile; moves: { resource_id: string; path: string }[] }) {
      if (b.move_profile === 'broad' && !hasRole(scope, 'workspace_admin'))
        throw forbidden('move_profile broad is for workspace admins');
      if (b.move_profile === 'document' && !scope.brainId)
        throw validationError('X-Brain-Id: required for move_profile document (moves stay within one brain)');
      const moved: { id: string; kind: string; from_path: string; to_path: string }[] = [];
      const notFound: string[] = [];
      for (const m of b.moves) {
        const path = normalizePath(m.path);
        const r = await repo.documents.get(scope.workspaceId, m.resource_id.toLowerCase());
        if (!r || (b.move_profile === 'document' && r.brainId !== scope.brainId)) {
          notFound.push(m.resource_id);
          continue;
        }
        const asOwnBrain: Scope = { ...scope, brainId: r.brainId };
        if (r.path !== path) await d.documents.move(asOwnBrain, r._id, path);
        moved.push({ id: r._id, kind: r.lane, from_path: r.path, to_path: path });
      }
      return { moved, not_found: notFound };
    },
  };
}
