import { randomUUID } from 'node:crypto';
import type { SkillDoc } from './model.js';
import type { SkillStore } from './store.js';
import type { WorkspaceRepo, ResourceEvents } from '../platform/index.js';
import { conflict, notFound, validationError } from '../kernel/errors.js';
import type { SkillCreateBody, SkillListQuery, SkillUpdateBody } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import { toNeuronSlug } from '../neurons/index.js';

const SORT = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;
const toLinks = (l: { integration_id: string; scope_path: string }[]) =>
  l.map((x) => ({ integrationId: x.integration_id.toLowerCase(), scopePath: x.scope_path }));

/**
 * Skills (`/v1/skills` in the API reference): versioned Markdown with tool links, on the document lane with
 * kind `skill`. Every PUT records a version (claimed by unique id, src/kernel/store/claims.ts) and
 * latest_version rises with it; `skill_path` is `skills/<slug of path_name>`, unique in its brain.
 */
export function createSkillService({
  repo,
  workspaces,
  events,
}: {
  repo: SkillStore;
  workspaces: WorkspaceRepo;
  events: ResourceEvents;
}) {
  const ref = (s: SkillDoc) => ({
    kind: 'skill' as const,
    id: s._id,
    brain_id: s.brainId,
    name: s.name,
    version: s.latestVersion,
  });
  const pathOf = (name: string) => {
    const slug = toNeuronSlug(name);
    if (!slug) throw validationError('path_name: must contain at least one letter or digit');
    return `skills/${slug}`;
  };
  const pathTaken = (p: string) => conflict(`A skill at ${p} already exists in this brain`);

  async function get(scope: Scope, id: string): Promise<SkillDoc> {
    const s = await repo.findById(scope.workspaceId, id);
    if (!s || (scope.brainId && s.brainId !== scope.brainId)) throw notFound('Skill');
    return s;
  }

  return {
    get,
    async list(scope: Scope, q: SkillListQuery) {
      const brainId = q.brain_id ?? scope.brainId;
      const dir = q.sortDirection === 'asc' ? 1 : -1;
      return repo.page(scope.workspaceId, { brainId }, { field: SORT[q.sortBy], dir }, q);
    },

    async create(scope: Scope, body: SkillCreateBody): Promise<SkillDoc> {
      const brainId = body.brain_id ?? scope.brainId;
      if (!brainId) throw validationError('brain_id: required (or send X-Brain-Id)');
      if (!(await workspaces.findBrain(scope.workspaceId, brainId))) throw notFound('Brain');
      const now = new Date();
      const doc: SkillDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        name: body.path_name,
        skillPath: pathOf(body.path_name),
        bodyMd: body.body_md,
        toolLinks: toLinks(body.tool_links),
        latestVersion: 1,
        createdBy: scope.userId ?? scope.apiKeyId,
        createdAt: now,
        updatedAt: now,
      };
      if (!(await repo.create(doc))) throw pathTaken(doc.skillPath);
      await events.emit(scope.workspaceId, 'created', ref(doc));
      return doc;
    },

    /** Every change is a new version; the head converges on the newest claimed version. */
    async update(scope: Scope, id: string, body: SkillUpdateBody): Promise<SkillDoc> {
      const cur = await get(scope, id);
      const name = body.path_name ?? cur.name;
      const skillPath = pathOf(name);
      if (skillPath !== cur.skillPath && (await repo.pathTaken(scope.workspaceId, cur.brainId, skillPath, cur._id)))
        throw pathTaken(skillPath);
      const change = {
        name,
        skillPath,
        bodyMd: body.body_md,
        toolLinks: body.tool_links ? toLinks(body.tool_links) : undefined,
        createdBy: scope.userId ?? scope.apiKeyId,
      };
      const head = await repo.recordVersion(cur, change);
      if (head === 'path_taken') throw pathTaken(skillPath);
      const next: SkillDoc = { ...cur, ...head };
      await events.emit(scope.workspaceId, 'updated', ref(next));
      return next;
    },

    async remove(scope: Scope, id: string): Promise<void> {
      const cur = await get(scope, id);
      await repo.remove(scope.workspaceId, cur._id);
      await events.emit(scope.workspaceId, 'deleted', ref(cur));
    },
  };
}
export type SkillService = ReturnType<typeof createSkillService>;
