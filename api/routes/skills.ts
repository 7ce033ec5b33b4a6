import type { z } from 'zod';
import { IdParams, SuccessBody } from '../../src/kernel/schemas.js';
import type { SkillDoc } from '../../src/skills/index.js';
import { Skill, SkillCreateBody, SkillList, SkillListQuery, SkillUpdateBody } from '../../src/skills/index.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ skills: s.skills }));

const tags = ['skills'];
/** Wire shape of a skill; every field listed. */
function presentSkill(s: SkillDoc): z.input<typeof Skill> {
  return {
    id: s._id,
    brain_id: s.brainId,
    name: s.name,
    path_name: s.name,
    skill_path: s.skillPath,
    body_md: s.bodyMd,
    tool_links: s.toolLinks.map((l) => ({ integration_id: l.integrationId, scope_path: l.scopePath })),
    latest_version: s.latestVersion,
    kind: 'skill',
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/** Skills: versioned Markdown with tool links. */
export default [
  route({
    method: 'get',
    path: '/v1/skills',
    summary: 'List skills',
    brain: 'optional',
    query: SkillListQuery,
    response: SkillList,
    tags,
    handler: async ({ query, scope, services }) => {
      const p = await services.skills.list(scope, query);
      return { skills: p.items.map(presentSkill), ...presentPage(p) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/skills/:id',
    summary: 'Read a skill',
    brain: 'optional',
    params: IdParams,
    response: Skill,
    tags,
    handler: async ({ params, scope, services }) => presentSkill(await services.skills.get(scope, params.id)),
  }),
  route({
    method: 'post',
    path: '/v1/skills',
    summary: 'Create a skill',
    status: 201,
    brain: 'optional',
    body: SkillCreateBody,
    response: Skill,
    tags,
    handler: async ({ body, scope, services }) => presentSkill(await services.skills.create(scope, body)),
  }),
  route({
    method: 'put',
    path: '/v1/skills/:id',
    summary: 'Change a skill',
    brain: 'optional',
    params: IdParams,
    body: SkillUpdateBody,
    response: Skill,
    tags,
    description: 'Every change records a new version (latest_version rises)',
    handler: async ({ params, body, scope, services }) =>
      presentSkill(await services.skills.update(scope, params.id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/skills/:id',
    summary: 'Delete a skill',
    brain: 'optional',
    params: IdParams,
    response: SuccessBody,
    tags,
    handler: async ({ params, scope, services }) => {
      await services.skills.remove(scope, params.id);
      return { success: true as const };
    },
  }),
];
