import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console's edits of a stakeholder map and of a meeting's title (docs/console.md) in Debian's
 * Chromium against the real platform, done with a member's key: the API gives any member of the
 * workspace these edits (the map's patch and the meeting's central patch declare no role), so a
 * member sees the controls and the API takes what they send. Stakeholders are added, changed (a
 * rename keeps the person: one node, not two) and removed; a relation between two is added, shown
 * as an edge of its polarity, and removed; each change is read back from the API. A meeting is
 * renamed from its page. Every page: no console error, no request to another origin; screenshots
 * in test-output/console/.
 */
const { app } = useSimPlatform({ firstTokenMs: 20, interTokenMs: 5, tokens: 8 });
const { tab, shots } = useConsoleBrowser('console-workspace-edits', () => app.url, { timezoneId: 'UTC' });

async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const poll = <T>(fn: () => Promise<T> | T, timeout = 20_000) => expect.poll(fn, { timeout });

interface Live {
  stakeholders: { id: string; name: string; role: string | null; stance: string; influence: string | null }[];
  edges: { from: string; to: string; polarity: string; strength: number; relation: string | null }[];
}

describe('editing the workspace', () => {
  it("adds, changes and removes stakeholders and a relation on the brain's map, as a member", async () => {
    const ws = await buildWorkspace(app);
    const made = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member key' });
    const memberKey = String(made.body.key);
    const live = async () => (await app.get<Live>('/v1/stakeholder-map', ws.key, ws.brainHeaders)).body;

    const { page, clean } = await tab();
    await signIn(page, memberKey, '/workspace?tab=stakeholders');
    const person = page.getByRole('form', { name: 'Stakeholder' });
    await person.getByLabel('Name').waitFor();
    // The first two people: no relation form until there are two.
    expect(await page.getByRole('form', { name: 'Relation' }).count()).toBe(0);
    await person.getByLabel('Name').fill('Grace');
    await person.getByLabel('Role').fill('CFO');
    await person.getByLabel('Influence').selectOption('high');
    await person.getByLabel('Stance').selectOption('supportive');
    await person.getByRole('button', { name: 'Add stakeholder' }).click();
    await page.locator('[data-stakeholder="Grace"]').waitFor();
    // The form is cleared for the next one.
    expect(await person.getByLabel('Name').inputValue()).toBe('');
    await person.getByLabel('Name').fill('Linus');
    await person.getByLabel('Stance').selectOption('opposed');
    await person.getByRole('button', { name: 'Add stakeholder' }).click();
    await page.locator('[data-stakeholder="Linus"]').waitFor();
    expect(await page.locator('[data-stakeholder="Linus"]').getAttribute('data-stance')).toBe('opposed');
    let map = await live();
    expect(map.stakeholders.map((s) => [s.name, s.role, s.influence, s.stance]).sort()).toEqual([
      ['Grace', 'CFO', 'high', 'supportive'],
      ['Linus', null, null, 'opposed'],
    ]);
    const grace = map.stakeholders.find((s) => s.name === 'Grace')!.id;
    const linus = map.stakeholders.find((s) => s.name === 'Linus')!.id;

    // A relation: a tension between them, drawn as a negative edge.
    const rel = page.getByRole('form', { name: 'Relation' });
    await rel.getByLabel('Between').selectOption({ label: 'Grace' });
    await rel.getByLabel('And').selectOption({ label: 'Linus' });
    await rel.getByLabel('Polarity').selectOption('negative');
    await rel.getByLabel('Strength').fill('0.8');
    await rel.getByLabel('Relation', { exact: true }).fill('budget dispute');
    await rel.getByRole('button', { name: 'Add relation' }).click();
    await page.locator('line[data-polarity="negative"]').waitFor({ state: 'attached' });
    map = await live();
    expect(map.edges).toHaveLength(1);
    expect(map.edges[0]).toMatchObject({ polarity: 'negative', strength: 0.8, relation: 'budget dispute' });
    expect([map.edges[0].from, map.edges[0].to].sort()).toEqual([grace, linus].sort());
    await page.locator('[data-stakeholder="Grace"]').click();
    await poll(() => page.locator('[data-card="Grace"]').textContent()).toContain('Linus: budget dispute (negative)');
    await shots(page, 'workspace-stakeholders-edit');

    // Change Linus: a new name renames him (the same id), a new stance recolours him.
    await person.getByLabel('Stakeholder').selectOption({ label: 'Linus' });
    expect(await person.getByLabel('Name').inputValue()).toBe('Linus');
    await person.getByLabel('Name').fill('Linus T');
    await person.getByLabel('Stance').selectOption('neutral');
    await person.getByRole('button', { name: 'Save stakeholder' }).click();
    await page.locator('[data-stakeholder="Linus T"]').waitFor();
    expect(await page.locator('[data-stakeholder]').count()).toBe(2);
    expect(await page.locator('[data-stakeholder="Linus T"]').getAttribute('data-stance')).toBe('neutral');
    map = await live();
    expect(map.stakeholders.find((s) => s.id === linus)).toMatchObject({ name: 'Linus T', stance: 'neutral' });
    // The relation is kept through the rename.
    expect(map.edges).toHaveLength(1);

    // The pair's relation shows in the form when both are chosen; removed, the edge goes.
    await rel.getByLabel('Between').selectOption({ label: 'Linus T' });
    await rel.getByLabel('And').selectOption({ label: 'Grace' });
    expect(await rel.getByLabel('Relation', { exact: true }).inputValue()).toBe('budget dispute');
    await rel.getByRole('button', { name: 'Remove relation' }).click();
    await page.locator('line[data-polarity]').first().waitFor({ state: 'detached' });
    expect((await live()).edges).toHaveLength(0);

    // Remove a stakeholder.
    await person.getByLabel('Stakeholder').selectOption({ label: 'Linus T' });
    await person.getByRole('button', { name: 'Remove stakeholder' }).click();
    await page.locator('[data-stakeholder="Linus T"]').waitFor({ state: 'detached' });
    map = await live();
    expect(map.stakeholders.map((s) => s.name)).toEqual(['Grace']);
    await shots(page, 'workspace-stakeholders-removed');
    clean();
  }, 120_000);

  it('renames a meeting from its page, as a member', async () => {
    const ws = await buildWorkspace(app);
    const made = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member key' });
    const memberKey = String(made.body.key);
    const meeting = await app.post('/v1/meetings', ws.key, {
      title: 'Vendor sync',
      brain_id: ws.brainId,
      body: { agenda: ['Pick a vendor'] },
    });
    expect(meeting.status, meeting.text).toBe(201);
    const id = String(meeting.body.id);

    const { page, clean } = await tab();
    await signIn(page, memberKey, '/workspace?tab=meetings');
    await page.getByRole('link', { name: 'Vendor sync' }).click();
    await page.getByRole('heading', { name: 'Vendor sync' }).waitFor();
    await page.getByRole('button', { name: 'Rename' }).click();
    const form = page.getByRole('form', { name: 'Rename meeting' });
    expect(await form.getByLabel('Title').inputValue()).toBe('Vendor sync');
    // An empty title is not sent.
    await form.getByLabel('Title').fill('   ');
    expect(await form.getByRole('button', { name: 'Save title' }).isDisabled()).toBe(true);
    await form.getByLabel('Title').fill('Vendor decision');
    await shots(page, 'meeting-rename');
    await form.getByRole('button', { name: 'Save title' }).click();
    await page.getByRole('heading', { name: 'Vendor decision' }).waitFor();
    const read = await app.get<{ title: string; version: number; body: { agenda: string[] } }>(
      `/v1/meetings/${id}`,
      ws.key,
      ws.brainHeaders,
    );
    expect(read.body.title).toBe('Vendor decision');
    expect(read.body.version).toBe(2);
    // Only the title changed.
    expect(read.body.body.agenda).toEqual(['Pick a vendor']);
    await page.goto(`${app.url}/console/workspace?tab=meetings`);
    await page.getByRole('link', { name: 'Vendor decision' }).waitFor();
    clean();
  }, 60_000);
});
