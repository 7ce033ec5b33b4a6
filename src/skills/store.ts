import type { Page, PageQuery, PageSort } from '../kernel/store/paging.js';
import type { SkillChange, SkillDoc, SkillRecordOutcome } from './model.js';

/**
 * What the skill service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter). Every operation takes the workspace.
 */
export interface SkillStore {
  /** The skill's head in the workspace, or null. */
  findById(workspaceId: string, id: string): Promise<SkillDoc | null>;
  /** A page of the workspace's skills, of one brain when given. */
  page(workspaceId: string, where: { brainId?: string }, sort: PageSort, q: PageQuery): Promise<Page<SkillDoc>>;
  /** Whether another skill of the brain has this path. */
  pathTaken(workspaceId: string, brainId: string, skillPath: string, exceptId: string): Promise<boolean>;
  /** A new skill and its version 1; false when its path is taken in the brain. */
  create(s: SkillDoc): Promise<boolean>;
  /** Records the change as the next version of `cur` (claimed once); the head fields it set, or why not. */
  recordVersion(cur: SkillDoc, change: SkillChange): Promise<SkillRecordOutcome>;
  /** Removes the skill and its versions. */
  remove(workspaceId: string, id: string): Promise<void>;
}
