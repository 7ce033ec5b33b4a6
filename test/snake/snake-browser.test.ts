import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openBrowser, requireChromium, type OpenBrowser } from '../support/browser.js';
import { startRealPlatform, type Script } from './support/real-platform.js';
import { snakeEnv, startSnake, type SnakeTestApp } from './support/snake-app.js';

/*
 * The page in Debian's chromium (installed by provisioning), driven by playwright-core: toggle fruit by
 * clicking, run ticks against an agent that heads for the fruit, pause when hidden, show agent and
 * service failures, and leave a screenshot in test-output/snake.png.
 */

const SCREENSHOT = path.resolve(import.meta.dirname, '../../test-output/snake.png');
const FRUIT_RGB = [0xf8, 0x51, 0x49];

let platform: Awaited<ReturnType<typeof startRealPlatform>>;
let app: SnakeTestApp;
let context: BrowserContext;
let browser: OpenBrowser | undefined;

/**
 * Heads for the fruit using only the invoke message (so it works unchanged behind a scripted model on
 * the real platform): among the safe moves listed, pick one that gets closer, else keep going if safe.
 */
function greedy({ message }: { message: string }): Script {
  const head = /Head at \((\d+), (\d+)\), heading (\w+)/.exec(message);
  const fruit = /Fruit: \((\d+), (\d+)\)/.exec(message);
  const safe = (/do not hit a wall or the body: ([a-z, ]+)\./.exec(message)?.[1] ?? '').split(', ').filter(Boolean);
  if (!head) return { text: 'no idea' };
  const [hx, hy, heading] = [Number(head[1]), Number(head[2]), head[3]];
  const wants: string[] = [];
  if (fruit) {
    const [fx, fy] = [Number(fruit[1]), Number(fruit[2])];
    if (fx > hx) wants.push('right');
    if (fx < hx) wants.push('left');
    if (fy > hy) wants.push('down');
    if (fy < hy) wants.push('up');
  }
  const pick = wants.find((h) => safe.includes(h)) ?? (safe.includes(heading) ? heading : safe[0]) ?? heading;
  return { text: pick };
}

beforeAll(async () => {
  requireChromium();
  platform = await startRealPlatform();
  platform.script(greedy);
  app = await startSnake(snakeEnv(platform));
  browser = await openBrowser('snake-chromium-', { viewport: { width: 1000, height: 640 } });
  context = browser.context;
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await platform?.close();
});

const text = (page: Page, id: string) => page.locator(`#${id}`).innerText();

/** Clicks the centre of board cell (x, y), wherever the canvas ends up on the page. */
async function clickCell(page: Page, x: number, y: number) {
  const box = (await page.locator('#board').boundingBox())!;
  const size = await page.locator('#board').evaluate((c: HTMLCanvasElement) => [c.width, c.height]);
  await page.mouse.click(
    box.x + ((x + 0.5) * 28 * box.width) / size[0],
    box.y + ((y + 0.5) * 28 * box.height) / size[1],
  );
}

/** The RGB drawn at the centre of cell (x, y). */
const pixel = (page: Page, x: number, y: number) =>
  page
    .locator('#board')
    .evaluate(
      (c: HTMLCanvasElement, [cx, cy]) =>
        [...c.getContext('2d')!.getImageData(cx * 28 + 14, cy * 28 + 14, 1, 1).data].slice(0, 3),
      [x, y],
    );

it('plays: toggles fruit, ticks with the agent, pauses when hidden, shows failures', async () => {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));

  await page.goto(app.url);
  await expect.poll(() => text(page, 'status')).toBe('stopped');
  expect(await page.locator('#board').getAttribute('data-head')).toBe('8,8');
  expect(await text(page, 'score')).toBe('0');

  // Fruit rule in the browser: place, move (replaces), remove, place again; a snake cell is refused.
  await clickCell(page, 11, 8);
  await expect.poll(() => text(page, 'fruit')).toBe('(11, 8)');
  expect(await pixel(page, 11, 8)).toEqual(FRUIT_RGB);
  await clickCell(page, 3, 2);
  await expect.poll(() => text(page, 'fruit')).toBe('(3, 2)');
  expect(await pixel(page, 11, 8)).not.toEqual(FRUIT_RGB);
  await clickCell(page, 3, 2);
  await expect.poll(() => text(page, 'fruit')).toBe('none');
  await clickCell(page, 7, 8);
  await expect.poll(() => text(page, 'message')).toMatch(/cell \(7, 8\) is occupied by the snake \(VALIDATION_ERROR\)/);
  await clickCell(page, 11, 8);
  await expect.poll(() => page.locator('#board').getAttribute('data-fruit')).toBe('11,8');

  // Run: the agent heads right and eats the fruit three ticks later.
  await page.locator('#start').click();
  await expect.poll(() => text(page, 'start')).toBe('Pause');
  await expect.poll(() => text(page, 'score'), { timeout: 15_000 }).toBe('1');
  expect(Number(await text(page, 'tick'))).toBeGreaterThanOrEqual(3);
  expect(await page.locator('#board').getAttribute('data-head')).not.toBe('8,8');
  expect(await text(page, 'decision')).toMatch(/^agent → (up|down|left|right)$/);
  expect(await text(page, 'length')).toBe('4');

  // Hidden tab: the page sends visible: false, the service answers paused, and the agent is not called.
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await expect.poll(() => text(page, 'status'), { timeout: 20_000 }).toBe('paused (tab hidden)');
  expect(await text(page, 'message')).toMatch(/Paused while the tab is hidden/);
  const invokes = platform.invokes.length;
  const tickWhileHidden = await text(page, 'tick');
  await page.waitForTimeout(800);
  expect(platform.invokes.length).toBe(invokes);
  expect(await text(page, 'tick')).toBe(tickWhileHidden);
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await expect.poll(() => text(page, 'status'), { timeout: 10_000 }).toBe('running');
  await expect
    .poll(async () => Number(await text(page, 'tick')), { timeout: 20_000 })
    .toBeGreaterThan(Number(tickWhileHidden));

  // The agent misbehaves: the decision and the message say so, and the snake keeps going.
  platform.script(() => ({ text: 'banana' }));
  await expect.poll(() => text(page, 'decision'), { timeout: 15_000 }).toMatch(/^fallback → /);
  await expect
    .poll(() => text(page, 'message'))
    .toMatch(/Agent problem: the reply is not one of up, down, left, right; /);
  expect(await text(page, 'decision-detail')).toMatch(/reply: "banana"/);

  // Back to a good agent, a new fruit to chase, a few ticks, then pause and take the picture.
  platform.script(greedy);
  await expect.poll(() => text(page, 'decision'), { timeout: 15_000 }).toMatch(/^agent → /);
  const head = (await page.locator('#board').getAttribute('data-head'))!.split(',').map(Number);
  const target = { x: head[0] <= 8 ? 13 : 3, y: head[1] <= 8 ? 12 : 3 };
  await clickCell(page, target.x, target.y);
  await expect.poll(() => text(page, 'fruit')).toBe(`(${target.x}, ${target.y})`);
  const tickBefore = Number(await text(page, 'tick'));
  await expect
    .poll(async () => Number(await text(page, 'tick')), { timeout: 20_000 })
    .toBeGreaterThanOrEqual(tickBefore + 4);
  await page.locator('#start').click();
  await expect.poll(() => text(page, 'start')).toBe('Start');
  expect(await text(page, 'status')).toBe('stopped');
  await mkdir(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT });
  // The one failed request is the snake-cell click above, answered 400 on purpose.
  expect(problems).toEqual([
    'console: Failed to load resource: the server responded with a status of 400 (Bad Request)',
  ]);

  // The service goes away: the page says so instead of failing silently.
  await app.close();
  await page.locator('#start').click();
  await expect
    .poll(() => text(page, 'message'), { timeout: 20_000 })
    .toBe('Cannot reach the snake service. Is it running?');
  await expect.poll(() => text(page, 'start')).toBe('Start');
  await page.close();
}, 180_000);
