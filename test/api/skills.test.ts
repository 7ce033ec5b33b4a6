import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Skill, SkillList } from '../../src/skills/index.js';
import { buildWorkspace, useTestApp } from '../support/app.js';

const app = useTestApp();

describe('skills', () => {
  it('create, read, list, versioned updates, tool-link validation, 404 across workspaces, delete', async () => {
    const ws = await buildWorkspace(app);
    const link = { integration_id: randomUUID(), scope_path: 'repos/read' };
    const created = await app.post('/v1/skills', ws.key, {
      body_md: '# Triage\nRead the issue first.',
      path_name: 'Issue Triage',
      brain_id: ws.brainId,
      tool_links: [link],
    });
    expect(created.status).toBe(201);
    const s = Skill.parse(created.body);
    expect(s).toMatchObject({
      skill_path: 'skills/issue-triage',
      latest_version: 1,
      kind: 'skill',
      tool_links: [link],
    });
    expect(
      (await app.post('/v1/skills', ws.key, { body_md: 'x', path_name: 'issue triage', brain_id: ws.brainId })).status,
    ).toBe(409);
    expect(
      (
        await app.post('/v1/skills', ws.key, {
          body_md: 'x',
          path_name: 'bad link',
          brain_id: ws.brainId,
          tool_links: [{ integration_id: 'github', scope_path: 'x' }],
        })
      ).status,
    ).toBe(400);
    expect((await app.post('/v1/skills', ws.key, { body_md: 'x', path_name: 'no brain' })).status).toBe(400);
    expect(
      (
        await app.post('/v1/skills', ws.key, {
          body_md: 'x',
          path_name: 'bad path',
          brain_id: ws.brainId,
          tool_links: [{ integration_id: randomUUID(), scope_path: 'a b' }],
        })
      ).status,
    ).toBe(400);

    const v2 = Skill.parse((await app.put(`/v1/skills/${s.id}`, ws.key, { body_md: '# Triage v2' })).body);
    expect(v2).toMatchObject({ latest_version: 2, body_md: '# Triage v2', tool_links: [link] });
    const v3 = Skill.parse((await app.put(`/v1/skills/${s.id}`, ws.key, { tool_links: [] })).body);
    expect(v3).toMatchObject({ latest_version: 3, body_md: '# Triage v2', tool_links: [] });
    expect((await app.put(`/v1/skills/${s.id}`, ws.key, {})).status).toBe(400);
    expect(Skill.parse((await app.get(`/v1/skills/${s.id}`, ws.key)).body).latest_version).toBe(3);

    await app.post('/v1/skills', ws.key, { body_md: '# Other', path_name: 'Other', brain_id: ws.brainId });
    const list = SkillList.parse((await app.get('/v1/skills?sortBy=name&sortDirection=asc', ws.key)).body);
    expect(list.skills.map((x) => x.name)).toEqual(['Issue Triage', 'Other']);
    expect(list).toMatchObject({ total: 2, limit: 20 });

    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/skills/${s.id}`, other.key)).status).toBe(404);
    expect((await app.put(`/v1/skills/${s.id}`, other.key, { body_md: 'x' })).status).toBe(404);
    expect((await app.del(`/v1/skills/${s.id}`, other.key)).status).toBe(404);
    expect((await app.del(`/v1/skills/${s.id}`, ws.key)).status).toBe(200);
    expect((await app.get(`/v1/skills/${s.id}`, ws.key)).status).toBe(404);
  });
});
