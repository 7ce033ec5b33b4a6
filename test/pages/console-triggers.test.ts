import { describe, expect, it } from 'vitest';
import type { ConsoleMessage, Page } from 'playwright-core';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console's triggers (docs/console.md) in Debian's Chromium against the real platform: a
 * schedule made from the form for an agent (a weekday cron in Berlin) shows its next fire times as
 * the cron is typed, before saving (POST /v1/schedules/preview; a refused cron shows the API's
 * message), the saved schedule shows the same times Temporal computes, is paused and resumed and fired now; a share link made with a run limit is
 * shown once, works on the share page, shows its limit, and stops working once revoked. Every
 * page: no console error, no request to another origin; screenshots in test-output/console/.
 */
const { app } = useSimPlatform({ firstTokenMs: 20, interTokenMs: 5, tokens: 8 });
// The one expected failed load: GET …/share answers 404 for a receptor without a share link (the
// API's contract; the page shows the create form). Any other error fails the test.
const NO_SHARE_LINK = {
  expectedError: (m: ConsoleMessage) =>
    m.text().includes('404') && /\/v1\/receptors\/[^/]+\/[^/]+\/share$/.test(m.location().url),
};
// The schedule form's preview of a cron the API refuses: its 400 is shown in the form.
const REFUSED_PREVIEW = (m: ConsoleMessage) =>
  m.text().includes('400') && m.location().url.endsWith('/v1/schedules/preview');
const { tab, shots } = useConsoleBrowser('console-triggers', () => app.url, { timezoneId: 'UTC' });

async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const poll = <T>(fn: () => Promise<T> | T, timeout = 20_000) => expect.poll(fn, { timeout });

/** Weekday and wall-clock time of an instant in Berlin. */
const berlin = (iso: string) =>
  new Intl.DateTimeFormat('en-GB', {
    timeZone: 'Europe/Berlin',
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).format(new Date(iso));

describe('the triggers pages', () => {
  it('creates a weekday schedule for an agent, shows its next fire times, pauses, resumes and fires it now', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'digest writer',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status).toBe(201);
    const { page, clean } = await tab({
      expectedError: (m) => NO_SHARE_LINK.expectedError(m) || REFUSED_PREVIEW(m),
    });
    await signIn(page, ws.key, '/triggers');
    // The agent's own receptor is listed.
    await page.locator('table.triggers tbody tr', { hasText: 'digest-writer' }).first().waitFor();
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Schedule name').fill('weekday digest');
    await page.getByLabel('Runs').selectOption({ label: 'agent digest-writer' });
    const form = page.getByRole('form', { name: 'New schedule' });
    const preview = form.getByRole('list', { name: 'Next fire times' }).locator('li');
    // A cron the scheduler refuses: the API's message, and no times.
    await page.getByLabel('Cron').fill('61 * * * *');
    await poll(() => form.getByRole('status', { name: 'Timing problem' }).textContent()).toMatch(/timing/);
    expect(await preview.count()).toBe(0);
    await page.getByLabel('Cron').fill('0 9 * * 1-5');
    await page.getByLabel('Time zone').fill('Europe/Berlin');
    // Before saving: the next five fire times of what is typed, weekdays at 09:00 in Berlin.
    await poll(async () => {
      const at = await preview.evaluateAll((els) => els.map((e) => e.getAttribute('data-at')!));
      return at.length === 5 && at.every((t) => /^(Mon|Tue|Wed|Thu|Fri) 09:00$/.test(berlin(t)));
    }).toBe(true);
    const previewed = await preview.evaluateAll((els) => els.map((e) => e.getAttribute('data-at')!));
    await page.getByLabel('Message').fill('Write the digest');
    await shots(page, 'trigger-schedule-preview');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.waitForURL(/\/console\/triggers\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop()!;

    const times = page.getByRole('list', { name: 'Next fire times' }).locator('li');
    await poll(() => times.count()).toBe(5);
    const shown = await times.evaluateAll((els) => els.map((e) => e.getAttribute('data-at')!));
    for (const t of shown) expect(berlin(t)).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
    expect(shown.every((t, i) => i === 0 || Date.parse(t) > Date.parse(shown[i - 1]))).toBe(true);
    const read = async () =>
      (
        await app.get<{ schedule: { state: string; next_fire_times: string[]; fires_taken: number } }>(
          `/v1/receptors/${ws.workspaceId}/${id}?preview=5`,
          ws.key,
        )
      ).body.schedule;
    expect((await read()).next_fire_times).toEqual(shown);
    // What the form previewed before saving is what the saved schedule fires.
    expect(shown).toEqual(previewed);
    await shots(page, 'trigger-schedule');

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    expect((await read()).state).toBe('paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await read()).state).toBe('active');

    await page.getByRole('button', { name: 'Fire now' }).click();
    await poll(
      async () => (await app.get<{ jobs: unknown[] }>(`/v1/jobs?receptor_id=${id}`, ws.key)).body.jobs.length,
      30_000,
    ).toBeGreaterThan(0);
    await page.goto(`${app.url}/console/triggers`);
    await page.locator(`tr[data-receptor-id="${id}"]`).waitFor();
    await shots(page, 'triggers');
    clean();
  }, 120_000);

  it("creates an agent's share link with a run limit, shown once and working, then revokes it", async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'front desk',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status).toBe(201);
    const list = await app.get<{ receptors: { id: string; executable_target: { id: string | null } }[] }>(
      '/v1/receptors?limit=50',
      ws.key,
      ws.brainHeaders,
    );
    const receptor = list.body.receptors.find((r) => r.executable_target.id === String(n.body.id))!;
    expect(receptor).toBeDefined();

    const { page, clean } = await tab(NO_SHARE_LINK);
    // From the agent's page: its own receptor is linked.
    await signIn(page, ws.key, `/agents/${String(n.body.id)}`);
    await page.getByRole('link', { name: 'front-desk', exact: true }).click();
    await page.waitForURL(new RegExp(`/console/triggers/${receptor.id}$`));
    await page.getByLabel('Max runs').fill('3');
    await page.getByRole('button', { name: 'Create share link' }).click();
    const link = (await page.locator('[data-secret]').textContent())!;
    expect(link).toMatch(new RegExp(`^${app.url}/share/[^/]+/front-desk\\?t=.+`));
    const token = new URL(link).searchParams.get('t')!;
    const pub = `/v1/public/receptors/by-id/${receptor.id}?t=${encodeURIComponent(token)}`;
    expect((await app.get(pub, undefined)).status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();
    await poll(() => page.locator('[data-field="used-requests"]').textContent()).toBe('0 of 3');
    expect(await page.locator('body').textContent()).not.toContain(token);
    await shots(page, 'trigger-share');

    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: 'Create share link' }).waitFor();
    expect((await app.get(pub, undefined)).status).not.toBe(200);
    clean();
  }, 90_000);

  it("changes a saved schedule's timing with its next fire times shown before saving, and backfills a past range", async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'timing writer',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status).toBe(201);
    const sched = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'schedule',
      name: 'morning note',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: String(n.body.id) },
      timing: { cron: '0 9 * * *', timezone: 'UTC' },
      payload: { message: 'keep me' },
    });
    expect(sched.status, sched.text).toBe(201);
    const id = String(sched.body.id);
    type Read = {
      source_config: {
        payload?: unknown;
        timing: { cron: string; timezone: string; overlap: string; catchup_window: number };
      };
      schedule: { next_fire_times: string[] };
    };
    const read = async () => (await app.get<Read>(`/v1/receptors/${ws.workspaceId}/${id}?preview=5`, ws.key)).body;

    const { page, clean } = await tab({
      expectedError: (m) => NO_SHARE_LINK.expectedError(m) || REFUSED_PREVIEW(m),
    });
    await signIn(page, ws.key, `/triggers/${id}`);
    await poll(() => page.locator('[data-field="overlap"]').textContent()).toBe('skip');
    await page.getByRole('button', { name: 'Change timing' }).click();
    const form = page.getByRole('form', { name: 'Change timing' });
    const preview = form.getByRole('list', { name: 'Next fire times' }).locator('li');
    // The saved timing is what the form starts from, previewed as it stands.
    expect(await form.getByLabel('Cron').inputValue()).toBe('0 9 * * *');
    await poll(() => preview.count()).toBe(5);
    // A cron the scheduler refuses: the API's message in the form, no times, nothing saved.
    await form.getByLabel('Cron').fill('0 25 * * *');
    await poll(() => form.getByRole('status', { name: 'Timing problem' }).textContent()).toMatch(/timing/);
    expect(await preview.count()).toBe(0);
    await form.getByLabel('Cron').fill('30 14 * * 1-5');
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    await poll(async () => {
      const at = await preview.evaluateAll((els) => els.map((e) => e.getAttribute('data-at')!));
      return at.length === 5 && at.every((t) => /^(Mon|Tue|Wed|Thu|Fri) 14:30$/.test(berlin(t)));
    }).toBe(true);
    const previewed = await preview.evaluateAll((els) => els.map((e) => e.getAttribute('data-at')!));
    // Before saving, the stored schedule still fires at 09:00 UTC.
    expect((await read()).source_config.timing.cron).toBe('0 9 * * *');
    await form.getByLabel('When the last run is still going').selectOption('buffer_one');
    await form.getByLabel('Catch-up window').fill('15m');
    await shots(page, 'trigger-timing-edit');
    await page.getByRole('button', { name: 'Save timing' }).click();
    await page.getByRole('form', { name: 'Change timing' }).waitFor({ state: 'detached' });
    await poll(() => page.locator('[data-field="overlap"]').textContent()).toBe('buffer_one');

    const after = await read();
    expect(after.source_config.timing).toMatchObject({
      cron: '30 14 * * 1-5',
      timezone: 'Europe/Berlin',
      overlap: 'buffer_one',
      catchup_window: 900,
    });
    // The payload rides along: the PATCH replaces source_config whole.
    expect(after.source_config.payload).toEqual({ message: 'keep me' });
    // What the form previewed is what the saved schedule (Temporal) now fires, and the page shows it.
    expect(after.schedule.next_fire_times).toEqual(previewed);
    const shown = page.getByRole('list', { name: 'Next fire times' }).locator('li');
    await poll(() => shown.evaluateAll((els) => els.map((e) => e.getAttribute('data-at')!))).toEqual(previewed);
    expect(await page.locator('[data-field="catchup"]').textContent()).toBe('900 s');

    // Backfill Mon 2 to Thu 5 November 2026 (UTC, the browser's zone here): three weekdays at 14:30 in Berlin.
    await page.getByRole('button', { name: 'Backfill…' }).click();
    const bf = page.getByRole('form', { name: 'Backfill' });
    await bf.getByLabel('From').fill('2026-11-02T00:00');
    await bf.getByLabel('To').fill('2026-11-05T00:00');
    await bf.getByRole('button', { name: 'Start backfill' }).click();
    await poll(() => bf.locator('[data-field="backfilled"]').textContent()).toBe('3 runs started.');
    await poll(
      async () => (await app.get<{ jobs: unknown[] }>(`/v1/jobs?receptor_id=${id}`, ws.key)).body.jobs.length,
      30_000,
    ).toBeGreaterThanOrEqual(3);
    await shots(page, 'trigger-backfill');
    clean();
  }, 120_000);

  it("shows a member no schedule or share control on a workspace agent's receptor; the API refuses them", async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'shared desk',
      brain_id: ws.brainId,
      scope: 'workspace',
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status).toBe(201);
    const sched = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'schedule',
      name: 'shared digest',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: String(n.body.id) },
      timing: { cron: '0 9 * * *', timezone: 'UTC' },
    });
    expect(sched.status, sched.text).toBe(201);
    const id = String(sched.body.id);
    const key = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member key' });
    const memberKey = String(key.body.key);

    const { page, clean } = await tab(NO_SHARE_LINK);
    await signIn(page, memberKey, `/triggers/${id}`);
    await poll(() => page.getByRole('list', { name: 'Next fire times' }).locator('li').count()).toBe(5);
    await page.locator('[data-note="share"]').waitFor();
    for (const name of [
      'Pause',
      'Resume',
      'Fire now',
      'Delete',
      'Create share link',
      'Revoke',
      'Change timing',
      'Backfill…',
    ])
      expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    clean();

    const base = `/v1/receptors/${ws.workspaceId}/${id}`;
    expect((await app.post(`${base}/schedule/pause`, memberKey, {})).status).toBe(403);
    expect((await app.post(`${base}/share`, memberKey, {})).status).toBe(403);
    const timing = { cron: '0 10 * * *', timezone: 'UTC' };
    const patch = { source_config: { activation: 'schedule', stimulus_keys: [], timing } };
    expect((await app.request('PATCH', base, { auth: memberKey, body: patch })).status).toBe(403);
    expect(
      (
        await app.post(`${base}/schedule/backfill`, memberKey, {
          start_at: '2026-11-02T00:00:00Z',
          end_at: '2026-11-03T00:00:00Z',
        })
      ).status,
    ).toBe(403);
  }, 60_000);
});
