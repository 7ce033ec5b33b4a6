/** The skills area's stored shapes (docs/glossary.md, "Skill"). */

interface SkillToolLink {
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
/** One version of a skill (claimed by unique `_id` `<skill>:<version>`, src/kernel/store/claims.ts). */
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

/** A change to record as the next version: fields left out keep the newest version's. */
export interface SkillChange {
  name: string;
  /** The head's path for `name`. */
  skillPath: string;
  bodyMd?: string;
  toolLinks?: SkillToolLink[];
  createdBy: string | null;
}
/** The outcome of recording a change: the head fields it set, or why it was not recorded. */
export type SkillRecordOutcome =
  Pick<SkillDoc, 'name' | 'skillPath' | 'bodyMd' | 'toolLinks' | 'latestVersion' | 'updatedAt'> | 'path_taken';
