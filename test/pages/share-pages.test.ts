import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { ReceptorList } from '../../src/receptors/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { openBrowser, type OpenBrowser } from '../support/browser.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The share page and the approval page in Debian's Chromium (playwright-core): an answer that
 * streams, a reload in the middle of it (the text neither lost nor doubled), the revoked state,
 * and an approval that lets a waiting pathway run complete. Screenshots go to test-output/pages/.
 */
const { app } = useSimPlatform({ firstTokenMs: [100, 200], interTokenMs: 120, tokens: [25, 30] });
const OUT = path.resolve(import.meta.dirname, '../../test-output/pages');
const WIDTHS = { desktop: { width: 1100, height: 760 }, phone: { width: 390, height: 844 } };
let context: BrowserContext;
let browser: OpenBrowser | undefined;

beforeAll(async () => {
  browser = await openBrowser('pages-chromium-', { viewport: WIDTHS.desktop });
  context = browser.context;
});
afterAll(async () => {
  await browser?.close();
});

async function shots(page: Page, name: string) {
  for (const [label, size] of Object.entries(WIDTHS)) {
    await page.setViewportSize(size);
    await page.screenshot({ path: path.join(OUT, `${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize(WIDTHS.desktop);
}

describe('the share page', () => {
  it('streams an answer, survives a reload mid-answer without losing or doubling text, and shows the revoked state', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'page helper',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim' },
    });
    const r = ReceptorList.parse(
      (await app.get('/v1/receptors?limit=200', ws.key, ws.brainHeaders)).body,
    ).receptors.find((x) => x.executable_target.id === String(n.body.id))!;
    const share = await app.post(`/v1/receptors/${ws.workspaceId}/${r.slug}/share`, ws.key, {
      customization: { title: 'Ask the helper', greeting: 'Hi! Ask me anything.', colors: { primary: '#8250df' } },
    });
    expect(share.status).toBe(201);
    const page = await context.newPage();
    await page.goto(`${app.url}${String(share.body.share_url)}`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Ask the helper');
    await expect.poll(() => page.locator('#log li.agent').first().textContent()).toBe('Hi! Ask me anything.');
    await page.getByLabel('Your message').fill('Tell me something long');
    await page.keyboard.press('Enter');
    // Streaming: the answer grows while the run is going.
    const streaming = page.locator('#log li.agent.streaming');
    await expect
      .poll(async () => ((await streaming.count()) ? ((await streaming.textContent()) ?? '').length : 0), {
        timeout: 15_000,
      })
      .toBeGreaterThan(10);
    await shots(page, 'share-streaming');
    await page.reload();
    // After the reload the same conversation shows, the cut answer resumes and finishes.
    await expect
      .poll(
        async () =>
          (await page.locator('#log li').count()) === 2 &&
          (await page.locator('#log li.agent.streaming').count()) === 0,
        { timeout: 30_000 },
      )
      .toBe(true);
    const texts = await page.locator('#log li').allTextContents();
    const stored = (
      await app.get<{ engrams: { source_type: string; content: { content: string } }[] }>(
        `/v1/traces/${await page.evaluate(() => JSON.parse(Object.values(localStorage).find((v) => v.includes('traceId'))!).traceId as string)}/messages`,
        ws.key,
      )
    ).body.engrams;
    expect(stored.map((e) => e.source_type)).toEqual(['user', 'neuron']);
    expect(texts).toEqual(['Tell me something long', stored[1].content.content]);
    await shots(page, 'share-answered');

    await app.del(`/v1/receptors/${ws.workspaceId}/${r.slug}/share`, ws.key);
    await page.reload();
    await expect.poll(() => page.locator('#notice').textContent()).toContain('no longer works');
    expect(await page.locator('#send').isDisabled()).toBe(true);
    await shots(page, 'share-revoked');
    await page.close();
  });
});

describe('the approval page', () => {
  it('approves a waiting pathway run, which then completes; a second visit shows the outcome', async () => {
    const ws = await buildWorkspace(app);
    const graph = {
      nodes: [
        { id: 's', type: 'start' },
        {
          id: 'h',
          type: 'human',
          data: { title: 'Publish the release notes?', prompt: 'Version 2.4 notes are ready for the blog.' },
        },
        { id: 'o', type: 'output', data: { value: '"published"' } },
      ],
      edges: [
        { source: 's', target: 'h' },
        { source: 'h', target: 'o', data: { condition: 'approve' } },
      ],
    };
    const p = await app.post('/v1/pathways', ws.key, { name: 'release', pathway_graph: graph }, ws.brainHeaders);
    const run = await app.post(`/v1/pathways/${String(p.body.id)}/execute`, ws.key, {}, ws.brainHeaders);
    const jobId = String(run.body.job_id);
    let interventionId = '';
    await expect
      .poll(
        async () => {
          const s = await app.get<{ status: string; waitingFor?: { interventionId: string } }>(
            `/v1/jobs/${jobId}/status`,
            ws.key,
          );
          interventionId = s.body.waitingFor?.interventionId ?? '';
          return s.body.status;
        },
        { timeout: 20_000 },
      )
      .toBe('waiting');
    const rec = await app.get<{ deliveries: { page_url?: string }[] }>(`/v1/interventions/${interventionId}`, ws.key);
    const pageUrl = rec.body.deliveries[0].page_url!;
    const page = await context.newPage();
    await page.goto(`${app.url}${pageUrl}`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Publish the release notes?');
    await expect.poll(() => page.locator('#prompt').textContent()).toContain('Version 2.4');
    await shots(page, 'approve-asked');
    await page.getByLabel('Comment (optional)').fill('Looks good');
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('#result').textContent()).toContain('Approved');
    await shots(page, 'approve-done');
    const job = await settleJob(app, ws.key, jobId);
    expect(job).toMatchObject({ status: 'completed' });
    expect(job.result).toMatchObject({ output: 'published' });
    await page.reload();
    await expect.poll(() => page.locator('#result').textContent()).toContain('Approved');
    await page.close();
  });
});
