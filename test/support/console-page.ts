import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ConsoleMessage, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, onTestFailed } from 'vitest';
import { openBrowser, type OpenBrowser } from './browser.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Where the console's page tests put their screenshots. */
export const CONSOLE_SHOTS = path.join(ROOT, 'test-output/console');
/** The two sizes every page is shot at. */
export const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };

/** The newest modification time under a folder (the console's sources). */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

export interface TabOptions {
  /** Other origins the page may reach (an OAuth provider's login), with the requests their own frames make. */
  allowOrigins?: string[];
  /** A console error the page's contract expects (a 404 the page answers with a form, say). */
  expectedError?: (m: ConsoleMessage) => boolean;
  /** Keeps the text of every `/v1/` answer the page read (`bodies`), to show a value was never sent. */
  keepBodies?: boolean;
  /** Accepts every dialog (confirmations); false leaves them to Playwright (dismissed). Default true. */
  acceptDialogs?: boolean;
}

/**
 * The console's page tests' browser (Debian's Chromium, docs/console.md): checks before the file's
 * tests that console/dist is built from the current sources, opens one context for the file and
 * closes it after. `tab()` opens a page that records console errors (on the platform's own origin)
 * and requests to other origins, and shoots the page when a test fails; `clean()` asserts neither
 * happened. `shots(page, name)` takes the page at both sizes.
 */
export function useConsoleBrowser(name: string, url: () => string, opts: { timezoneId?: string } = {}) {
  let browser: OpenBrowser | undefined;
  beforeAll(async () => {
    const built = path.join(ROOT, 'console/dist/index.html');
    if (!existsSync(built) || statSync(built).mtimeMs < newest(path.join(ROOT, 'console/src')))
      throw new Error('console/dist is missing or older than console/src: run npm run console:build');
    await mkdir(CONSOLE_SHOTS, { recursive: true });
    browser = await openBrowser(`${name}-chromium-`, { viewport: SIZES.desktop, ...opts });
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function tab(o: TabOptions = {}) {
    if (!browser) throw new Error('the browser is not open (useConsoleBrowser runs in beforeAll)');
    const page = await browser.context.newPage();
    onTestFailed(async ({ task }) => {
      const shot = `failed-${task.name.slice(0, 40).replace(/\W+/g, '-')}.png`;
      await page.screenshot({ path: path.join(CONSOLE_SHOTS, shot), fullPage: true }).catch(() => undefined);
    });
    const allow = o.allowOrigins ?? [];
    const problems: string[] = [];
    const foreign: string[] = [];
    const bodies: string[] = [];
    const origin = new URL(url()).origin;
    page.on('request', (req) => {
      const u = req.url();
      if (u.startsWith('data:') || u.startsWith('blob:')) return;
      const from = req.frame().url();
      if (from.startsWith('http') && allow.includes(new URL(from).origin)) return;
      const o2 = new URL(u).origin;
      if (o2 !== origin && !allow.includes(o2)) foreign.push(u);
    });
    if (o.keepBodies)
      page.on('response', (res) => {
        if (res.url().includes('/v1/'))
          void res.text().then(
            (t) => bodies.push(t),
            () => undefined,
          );
      });
    page.on('console', (m) => {
      if (m.type() !== 'error' || o.expectedError?.(m)) return;
      // Pages of another origin (a provider's login during an OAuth flow) are not the console's.
      if (new URL(page.url()).origin === origin || page.url() === 'about:blank') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    if (o.acceptDialogs !== false) page.on('dialog', (d) => void d.accept());
    const clean = () => {
      expect(problems, 'console errors').toEqual([]);
      expect(foreign, 'requests to other origins').toEqual([]);
    };
    return { page, clean, bodies };
  }

  async function shots(page: Page, shot: string) {
    for (const [label, size] of Object.entries(SIZES)) {
      await page.setViewportSize(size);
      await page.waitForTimeout(150);
      await page.screenshot({ path: path.join(CONSOLE_SHOTS, `${shot}-${label}.png`), fullPage: true });
    }
    await page.setViewportSize(SIZES.desktop);
  }

  return { tab, shots };
}
