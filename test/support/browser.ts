import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type BrowserContextOptions } from 'playwright-core';

/** Debian's Chromium, installed by scripts/provision.sh: the browser of every page test. */
export const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Fails with what to do when Chromium is not installed. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run scripts/provision.sh (apt-get install chromium)`);
}

export interface OpenBrowser {
  context: BrowserContext;
  /** Closes the browser and removes its profile folder. */
  close(): Promise<void>;
}

/**
 * Headless Chromium with a fresh profile in a temporary folder named `<prefix>…`; `options` (the
 * viewport, …) are added to the launch options every test shares.
 */
export async function openBrowser(prefix: string, options: BrowserContextOptions = {}): Promise<OpenBrowser> {
  requireChromium();
  const userDataDir = await mkdtemp(path.join(tmpdir(), prefix));
  const removeProfile = () => rm(userDataDir, { recursive: true, force: true });
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      ...options,
    });
  } catch (e) {
    await removeProfile();
    throw e;
  }
  return {
    context,
    async close() {
      await context.close();
      await removeProfile();
    },
  };
}
