/** Workspace secrets: admins set them, values are sealed at rest and never returned, each workspace sees its own. */
import { describe, expect, it } from 'vitest';
import { buildWorkspace, useTestApp } from '../support/app.js';

const app = useTestApp();

describe('workspace secrets', () => {
  it('an admin puts, lists and deletes a secret; the value is sealed and never returned', async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const put = await app.put('/v1/secrets/BILLING_TOKEN', admin, { value: 'tok-123-very-secret' });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ name: 'BILLING_TOKEN' });
    expect(put.text).not.toContain('tok-123');
    const again = await app.put('/v1/secrets/BILLING_TOKEN', admin, { value: 'tok-456-rotated' });
    expect(again.body.created_at).toBe(put.body.created_at);

    const list = await app.get<{ secrets: { name: string }[] }>('/v1/secrets', admin);
    expect(list.status).toBe(200);
    expect(list.body.secrets.map((s) => s.name)).toEqual(['BILLING_TOKEN']);
    expect(list.text).not.toContain('tok-');

    const stored = await app.deps.db.collection('workspace_secrets').findOne({ workspaceId: ws.workspaceId });
    expect(JSON.stringify(stored)).not.toContain('tok-456');
    expect((await app.services.secrets.reveal(ws.workspaceId, ['BILLING_TOKEN', 'NOPE'])).get('BILLING_TOKEN')).toBe(
      'tok-456-rotated',
    );

    expect((await app.del('/v1/secrets/BILLING_TOKEN', admin)).status).toBe(200);
    expect((await app.del('/v1/secrets/BILLING_TOKEN', admin)).status).toBe(404);
    expect((await app.get('/v1/secrets', admin)).body.secrets).toEqual([]);
  });

  it('members may not touch secrets; names are checked; another workspace sees only its own', async () => {
    const a = await buildWorkspace(app);
    const b = await buildWorkspace(app);
    const adminA = await a.jwt(['workspace_admin']);
    const adminB = await b.jwt(['workspace_admin']);
    expect((await app.put('/v1/secrets/X', await a.jwt([]), { value: 'v' })).status).toBe(403);
    const bad = await app.put('/v1/secrets/1-bad', adminA, { value: 'v' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/name/);
    expect((await app.put('/v1/secrets/EMPTY', adminA, { value: '' })).status).toBe(400);
    await app.put('/v1/secrets/SHARED_NAME', adminA, { value: 'a-value' });
    await app.put('/v1/secrets/SHARED_NAME', adminB, { value: 'b-value' });
    expect((await app.services.secrets.reveal(a.workspaceId, ['SHARED_NAME'])).get('SHARED_NAME')).toBe('a-value');
    expect((await app.del('/v1/secrets/SHARED_NAME', adminB)).status).toBe(200);
    expect((await app.services.secrets.reveal(a.workspaceId, ['SHARED_NAME'])).get('SHARED_NAME')).toBe('a-value');
    expect((await app.get('/v1/secrets', adminB)).body.secrets).toEqual([]);
  });
});
