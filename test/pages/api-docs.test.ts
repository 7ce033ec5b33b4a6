import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { useTestApp } from '../support/app.js';
import { openBrowser, type OpenBrowser } from '../support/browser.js';

/**
 * The API reference page (/docs) in Debian's Chromium: Swagger UI served by the API itself renders
 * /v1/openapi.json, and a reader finds the invoke operation by its id, with its example. Every
 * request the page makes goes to the API's own origin (no CDN). Screenshot: test-output/pages/docs.png.
 */
const app = useTestApp();
const OUT = path.resolve(import.meta.dirname, '../../test-output/pages');
let context: BrowserContext;
let browser: OpenBrowser | undefined;

beforeAll(async () => {
  browser = await openBrowser('docs-chromium-', { viewport: { width: 1280, height: 900 } });
  context = browser.context;
});
afterAll(async () => {
  await browser?.close();
});

describe('the API reference page', () => {
  it('renders the OpenAPI document from same-origin assets and shows the invoke operation with its example', async () => {
    const page = await context.newPage();
    const origins = new Set<string>();
    const problems: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith('data:')) origins.add(new URL(req.url()).origin);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    const res = await page.goto(`${app.url}/docs`);
    expect(res?.status()).toBe(200);

    // Swagger UI renders the operation list virtually (only what is in view): a reader filters by tag.
    await page.locator('.operation-filter-input').fill('neurons');
    const invoke = page.locator('.opblock', {
      has: page.locator('.opblock-summary-path[data-path="/v1/neurons/{id}/invoke"]'),
    });
    await expect.poll(() => invoke.count(), { timeout: 20_000 }).toBe(1);
    expect(await invoke.locator('.opblock-summary-operation-id').textContent()).toBe('neurons.invoke');
    expect(await invoke.locator('.opblock-summary-description').textContent()).toBe('Invoke a neuron');
    await invoke.locator('.opblock-summary-control').click();
    await expect
      .poll(() => invoke.locator('.opblock-body').textContent(), { timeout: 10_000 })
      .toContain('Summarise the open incidents');
    // The error table from the API description is on the page.
    expect(await page.locator('.information-container').textContent()).toContain('VALIDATION_ERROR');
    await page.screenshot({ path: path.join(OUT, 'docs.png') });

    // A deep link by tag and operation id opens the operation directly.
    const linked = await context.newPage();
    await linked.goto(`${app.url}/docs#/jobs/jobs.stream`);
    await expect
      .poll(() => linked.locator('.opblock-summary-path[data-path="/v1/jobs/{jobId}/stream"]').count(), {
        timeout: 20_000,
      })
      .toBe(1);
    await linked.close();

    expect([...origins]).toEqual([app.url]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('serves the renderer assets from node_modules and 404s for anything else under /docs/assets', async () => {
    const js = await fetch(`${app.url}/docs/assets/swagger-ui-bundle.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect((await js.text()).length).toBeGreaterThan(100_000);
    const missing = await app.get('/docs/assets/toString');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'NOT_FOUND' });
  });
});
