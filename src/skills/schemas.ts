import { z } from 'zod';
import { SortDirection, Uuid, paging, PageTotal, pageFields } from '../kernel/schemas.js';

/** A tool a skill uses: an integration (UUID) and the path of its scope (for example "repos/read"). */
const ToolLink = z
  .object({
    integration_id: Uuid,
    scope_path: z
      .string()
      .min(1)
      .max(300)
      .regex(/^[\w./:*-]+$/, 'letters, digits and . / : * - _ only'),
  })
  .strict();
export const SkillCreateBody = z
  .object({
    body_md: z.string().max(200_000),
    brain_id: Uuid.optional(),
    path_name: z.string().min(1).max(200),
    tool_links: z.array(ToolLink).max(50).default([]),
  })
  .strict()
  .meta({ id: 'SkillCreateBody' });
export type SkillCreateBody = z.infer<typeof SkillCreateBody>;
export const SkillUpdateBody = z
  .object({
    body_md: z.string().max(200_000).optional(),
    path_name: z.string().min(1).max(200).optional(),
    tool_links: z.array(ToolLink).max(50).optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), 'send body_md, path_name or tool_links')
  .meta({ id: 'SkillUpdateBody' });
export type SkillUpdateBody = z.infer<typeof SkillUpdateBody>;
export const SkillListQuery = z.object({
  brain_id: Uuid.optional(),
  sortBy: z.enum(['created_at', 'updated_at', 'name']).default('created_at'),
  sortDirection: SortDirection.default('desc'),
  ...paging(20),
});
export type SkillListQuery = z.infer<typeof SkillListQuery>;
export const Skill = z
  .object({
    id: z.string(),
    brain_id: z.string(),
    name: z.string(),
    path_name: z.string(),
    skill_path: z.string(),
    body_md: z.string(),
    tool_links: z.array(z.object({ integration_id: z.string(), scope_path: z.string() })),
    latest_version: z.number(),
    kind: z.literal('skill'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Skill' });
export const SkillList = z.object({
  skills: z.array(Skill),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});
