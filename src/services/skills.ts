import { randomUUID } from 'node:crypto';
import type { Filter } from 'mongodb';
import { claimNext, isDuplicateKey } from '../db/claims.js';
import type { SkillDoc, SkillRepo, SkillVersionDoc } from '../db/skills.js';
import type { WorkspaceRepo } from '../db/workspaces.js';
import { conflict, notFound, validationError } from '../errors.js';
import type { SkillCreateBody, SkillListQuery, SkillUpdateBody } from '../schemas/skills.js';
import type { Scope } from '../scope.js';
import { toNeuronSlug } from './neurons.js';
import type { ResourceEvents } from './resource-events.js';

const SORT = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;
const toLinks = (l: { integration_id: string; scope_path: string }[]) =>
  l.map((x) => ({ integrationId: x.integration_id.toLowerCase(), scopePath: x.scope_path }));

/**
 * Skills (`/v1/skills` in the API reference): versioned Markdown with tool links, on the document lane with
 * kind `skill`. Every PUT records a version (claimed by unique id, src/db/claims.ts) and
 * latest_version rises with it; `skill_path` is `skills/<slug of path_name>`, unique in its brain.
 */
export function createSkillService({
  repo,
  workspaces,
  events,
}: {
  repo: SkillRepo;
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
    const s = await repo.find(scope.workspaceId, id);
    if (!s || (scope.brainId && s.brainId !== scope.brainId)) throw notFound('Skill');
    return s;
  }

  return {
    get,
    async list(scope: Scope, q: SkillListQuery) {
      const filter: Filter<SkillDoc> & { workspaceId: string } = { workspaceId: scope.workspaceId };
      const brain = q.brain_id ?? scope.brainId;
      if (brain) filter.brainId = brain;
      const dir = q.sortDirection === 'asc' ? 1 : -1;
      return repo.list(filter, { field: SORT[q.sortBy], dir }, q);
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
      try {
        await repo.skills.insertOne(doc);
      } catch (e) {
        if (isDuplicateKey(e)) throw pathTaken(doc.skillPath);
        throw e;
      }
      await repo.versions.insertOne({
        _id: `${doc._id}:1`,
        skillId: doc._id,
        workspaceId: doc.workspaceId,
        version: 1,
        bodyMd: doc.bodyMd,
        toolLinks: doc.toolLinks,
        name: doc.name,
        createdBy: doc.createdBy,
        createdAt: now,
      });
      await events.emit(scope.workspaceId, 'created', ref(doc));
      return doc;
    },

    /** Every change is a new version; the head converges on the newest claimed version. */
    async update(scope: Scope, id: string, body: SkillUpdateBody): Promise<SkillDoc> {
      const cur = await get(scope, id);
      const name = body.path_name ?? cur.name;
      const skillPath = pathOf(name);
      if (
        skillPath !== cur.skillPath &&
        (await repo.skills.findOne({
          workspaceId: scope.workspaceId,
          brainId: cur.brainId,
          skillPath,
          _id: { $ne: cur._id },
        }))
      )
        throw pathTaken(skillPath);
      let made: SkillVersionDoc | null = null;
      await claimNext(repo.versions, { skillId: cur._id }, 'version', (prev) => {
        const version = (prev?.version ?? cur.latestVersion) + 1;
        made = {
          _id: `${cur._id}:${version}`,
          skillId: cur._id,
          workspaceId: cur.workspaceId,
          version,
          name,
          bodyMd: body.body_md ?? prev?.bodyMd ?? cur.bodyMd,
          toolLinks: body.tool_links ? toLinks(body.tool_links) : (prev?.toolLinks ?? cur.toolLinks),
          createdBy: scope.userId ?? scope.apiKeyId,
          createdAt: new Date(),
        };
        return made;
      });
      const v = made as unknown as SkillVersionDoc;
      const head: Partial<SkillDoc> = {
        name: v.name,
        skillPath: pathOf(v.name),
        bodyMd: v.bodyMd,
        toolLinks: v.toolLinks,
        latestVersion: v.version,
        updatedAt: v.createdAt,
      };
      try {
        await repo.updateHead(
          { _id: cur._id, workspaceId: scope.workspaceId, latestVersion: { $lt: v.version } },
          head,
        );
      } catch (e) {
        if (isDuplicateKey(e)) throw pathTaken(head.skillPath!);
        throw e;
      }
      const next = { ...cur, ...head };
      await events.emit(scope.workspaceId, 'updated', ref(next));
      return next;
    },

    async remove(scope: Scope, id: string): Promise<void> {
      const cur = await get(scope, id);
      await repo.versions.deleteMany({ workspaceId: scope.workspaceId, skillId: cur._id });
      await repo.skills.deleteOne({ _id: cur._id, workspaceId: scope.workspaceId });
      await events.emit(scope.workspaceId, 'deleted', ref(cur));
    },
  };
}
export type SkillService = ReturnType<typeof createSkillService>;
