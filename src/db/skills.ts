import type { Db, Filter } from 'mongodb';
import { updateHeld, type HoldDoc } from './claims.js';
import type { IndexSpec } from './client.js';
import { findById } from './client.js';
import { page, pageIndexes, type PageQuery, type PageSort } from './paging.js';

export interface SkillToolLink {
  integrationId: string;
  scopePath: string;
}

/** A skill's head: the newest version's fields; the versions are the record. */
export interface SkillDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  name: string;
  skillPath: string;
  bodyMd: string;
  toolLinks: SkillToolLink[];
  latestVersion: number;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}
/** One version of a skill (claimed by unique `_id` `<skill>:<version>`, src/db/claims.ts). */
export interface SkillVersionDoc {
  _id: string;
  skillId: string;
  workspaceId: string;
  version: number;
  bodyMd: string;
  toolLinks: SkillToolLink[];
  name: string;
  createdBy: string | null;
  createdAt: Date;
}

export const skillIndexes: IndexSpec[] = [
  {
    collection: 'skills',
    keys: { workspaceId: 1, brainId: 1, skillPath: 1 },
    unique: true,
    name: 'ws_brain_path_unique',
  },
  // GET /v1/skills pages by (sort field, _id), workspace-wide or in one brain (src/db/paging.ts).
  ...pageIndexes('skills', ['workspaceId'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('skills', ['workspaceId', 'brainId'], ['createdAt', 'updatedAt', 'name']),
  { collection: 'skill_versions', keys: { skillId: 1, version: -1 }, name: 'skill_version' },
];

export function createSkillRepo(db: Db) {
  const skills = db.collection<SkillDoc>('skills');
  const versions = db.collection<SkillVersionDoc>('skill_versions');
  const holds = db.collection<HoldDoc>('skill_holds');
  return {
    skills,
    versions,
    /** The head's update, held (src/db/claims.ts): concurrent edits write it from different versions. */
    updateHead: (filter: Filter<SkillDoc> & { _id: string }, set: Partial<SkillDoc>) =>
      updateHeld(holds, skills, filter, set),
    find: (workspaceId: string, id: string) => findById(skills, id, { workspaceId }),
    list: (filter: Filter<SkillDoc> & { workspaceId: string }, sort: PageSort, q: PageQuery) =>
      page(skills, filter, sort, q),
  };
}
export type SkillRepo = ReturnType<typeof createSkillRepo>;
