import type { Db, Filter } from 'mongodb';
import { claimNext, isDuplicateKey, updateHeld, type HoldDoc } from '../kernel/store/claims.js';
import type { IndexSpec } from '../kernel/store/client.js';
import { findById } from '../kernel/store/client.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from '../kernel/store/paging.js';
import type { SkillChange, SkillDoc, SkillRecordOutcome, SkillVersionDoc } from './model.js';
import type { SkillStore } from './store.js';

export const skillIndexes: IndexSpec[] = [
  {
    collection: 'skills',
    keys: { workspaceId: 1, brainId: 1, skillPath: 1 },
    unique: true,
    name: 'ws_brain_path_unique',
  },
  // GET /v1/skills pages by (sort field, _id), workspace-wide or in one brain (src/kernel/store/paging.ts).
  ...pageIndexes('skills', ['workspaceId'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('skills', ['workspaceId', 'brainId'], ['createdAt', 'updatedAt', 'name']),
  { collection: 'skill_versions', keys: { skillId: 1, version: -1 }, name: 'skill_version' },
];

/** Skills and their versions; every query filters by workspace. */
export function createSkillRepo(db: Db): SkillStore {
  const skills = db.collection<SkillDoc>('skills');
  const versions = db.collection<SkillVersionDoc>('skill_versions');
  const holds = db.collection<HoldDoc>('skill_holds');
  const versionOf = (s: SkillDoc, v: number, at: Date): SkillVersionDoc => ({
    _id: `${s._id}:${v}`,
    skillId: s._id,
    workspaceId: s.workspaceId,
    version: v,
    bodyMd: s.bodyMd,
    toolLinks: s.toolLinks,
    name: s.name,
    createdBy: s.createdBy,
    createdAt: at,
  });
  return {
    findById: (workspaceId: string, id: string) => findById(skills, id, { workspaceId }),
    page: (workspaceId: string, where: { brainId?: string }, sort: PageSort, q: PageQuery): Promise<Page<SkillDoc>> =>
      page(skills, { workspaceId, ...(where.brainId ? { brainId: where.brainId } : {}) }, sort, q),
    /** Whether another skill of the brain has this path. */
    pathTaken: async (workspaceId: string, brainId: string, skillPath: string, exceptId: string) =>
      (await skills.findOne({ workspaceId, brainId, skillPath, _id: { $ne: exceptId } })) !== null,
    /** A new skill and its version 1; false when its path is taken in the brain. */
    async create(s: SkillDoc): Promise<boolean> {
      try {
        await skills.insertOne(s);
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
      await versions.insertOne(versionOf(s, 1, s.createdAt));
      return true;
    },
    /**
     * Records a change as the next version (claimed by unique `_id`, src/kernel/store/claims.ts) and moves the
     * head to it under a hold, unless the head is already newer (concurrent edits write it from
     * different versions).
     */
    async recordVersion(cur: SkillDoc, change: SkillChange): Promise<SkillRecordOutcome> {
      let made: SkillVersionDoc | null = null;
      await claimNext(versions, { skillId: cur._id }, 'version', (prev) => {
        const version = (prev?.version ?? cur.latestVersion) + 1;
        made = {
          _id: `${cur._id}:${version}`,
          skillId: cur._id,
          workspaceId: cur.workspaceId,
          version,
          name: change.name,
          bodyMd: change.bodyMd ?? prev?.bodyMd ?? cur.bodyMd,
          toolLinks: change.toolLinks ?? prev?.toolLinks ?? cur.toolLinks,
          createdBy: change.createdBy,
          createdAt: new Date(),
        };
        return made;
      });
      const v = made as unknown as SkillVersionDoc;
      const head = {
        name: v.name,
        skillPath: change.skillPath,
        bodyMd: v.bodyMd,
        toolLinks: v.toolLinks,
        latestVersion: v.version,
        updatedAt: v.createdAt,
      };
      const filter = { _id: cur._id, workspaceId: cur.workspaceId, latestVersion: { $lt: v.version } };
      try {
        await updateHeld(holds, skills, filter as Filter<SkillDoc> & { _id: string }, head);
      } catch (e) {
        if (isDuplicateKey(e)) return 'path_taken';
        throw e;
      }
      return head;
    },
    /** Removes the skill: its versions first, the head last. */
    async remove(workspaceId: string, id: string): Promise<void> {
      await versions.deleteMany({ workspaceId, skillId: id });
      await skills.deleteOne({ _id: id, workspaceId });
    },
  };
}
