/**
 * Bench section (r): the console (docs/console.md) in Debian's Chromium (playwright-core).
 * - First load: the bytes transferred (gzip, as the API sends them; headers included) to open
 *   /console in a fresh browser (the sign-in page: index.html, the app's script and styles), and then
 *   those of a signed-in run page with its graph (the graph chunk: React Flow and dagre). API calls
 *   are counted apart.
 * - Stream to colour: a pathway run of ENTRY_NODES transform nodes in a chain (after a delay that lets
 *   the page connect first) drawn on its run page; for each node, the time from its `node_start`
 *   entry being written (the Redis entry id is the server's clock in ms) to the node's `data-state`
 *   leaving `pending` in the page (a MutationObserver, on the same machine's clock). Median and p90
 *   over the ENTRY_NODES entries.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Page, type Request } from 'playwright-core';
import type { buildWorkspace, TestClient } from '../../../test/support/app.js';

type Workspace = Awaited<ReturnType<typeof buildWorkspace>>;
const CHROMIUM = '/usr/bin/chromium';
const ENTRY_NODES = 50;

export interface ConsoleResult {
  firstLoad: { bytes: number; rawBytes: number; requests: number };
  runPage: { assetBytes: number; assetRequests: number; apiBytes: number; apiRequests: number };
  /** ms from each node_start entry written to its node's state change in the page. */
  entryToColourMs: number[];
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)];

/** Bytes a request moved over the wire: response headers and the (encoded) body. */
async function transferred(req: Request): Promise<{ wire: number; raw: number }> {
  const sizes = await req.sizes();
  const res = await req.response();
  const raw = res ? (await res.body().catch(() => Buffer.alloc(0))).length : 0;
  return { wire: sizes.responseHeadersSize + sizes.responseBodySize, raw };
}

export async function measureConsole(
  app: TestClient,
  ws: Workspace,
  say: (line: string) => void,
): Promise<ConsoleResult> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/provision.sh`);
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-console-'));
  const browser = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    viewport: { width: 1280, height: 800 },
  });
  try {
    // First load: a fresh profile (empty cache) opening /console.
    const page = await browser.newPage();
    const first: Request[] = [];
    page.on('requestfinished', (r) => first.push(r));
    await page.goto(`${app.url}/console`, { waitUntil: 'networkidle' });
    await page.getByLabel('API key or JWT').waitFor();
    const sizes = await Promise.all(first.map(transferred));
    const firstLoad = {
      bytes: sizes.reduce((n, s) => n + s.wire, 0),
      rawBytes: sizes.reduce((n, s) => n + s.raw, 0),
      requests: first.length,
    };
    say(`(r) first load: ${firstLoad.bytes} bytes transferred in ${firstLoad.requests} requests`);

    // A pathway run whose nodes the page colours: a delay (the page connects meanwhile), then a chain.
    const nodes = [
      { id: 'start', type: 'start' },
      { id: 'wait', type: 'delay', data: { seconds: 4 } },
      ...Array.from({ length: ENTRY_NODES }, (_, i) => ({
        id: `n${i + 1}`,
        type: 'transform',
        data: { expression: `${i + 1}` },
      })),
    ];
    const edges = nodes.slice(1).map((n, i) => ({ source: nodes[i].id, target: n.id }));
    const created = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'bench-console', pathway_graph: { nodes, edges } },
      ws.brainHeaders,
    );
    if (created.status !== 201) throw new Error(`creating the pathway answered ${created.status}: ${created.text}`);
    const run = await app.post(`/v1/pathways/${String(created.body.id)}/execute`, ws.key, {}, ws.brainHeaders);
    if (run.status !== 202) throw new Error(`execute answered ${run.status}: ${run.text}`);
    const jobId = String(run.body.job_id);

    await page.getByLabel('API key or JWT').fill(ws.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    const runRequests: Request[] = [];
    page.on('requestfinished', (r) => runRequests.push(r));
    await page.goto(`${app.url}/console/runs/${jobId}`);
    await page.locator(`.pw-node[data-node-id="n${ENTRY_NODES}"]`).waitFor();
    const changes = await watchStates(page);
    await page.locator(`.pw-node[data-node-id="n${ENTRY_NODES}"][data-state="done"]`).waitFor({ timeout: 60_000 });
    const changedAt = await changes();

    // What the run page adds: the graph chunk (the app's own files come from the cache) and its API calls.
    let assetBytes = 0;
    let apiBytes = 0;
    let assetRequests = 0;
    let apiRequests = 0;
    for (const r of runRequests) {
      if (r.url().includes('/stream')) continue; // the stream is open-ended: not a load figure
      const { wire } = await transferred(r);
      if (new URL(r.url()).pathname.startsWith('/console')) {
        assetBytes += wire;
        assetRequests++;
      } else {
        apiBytes += wire;
        apiRequests++;
      }
    }

    // When each node_start entry was written: the ids of the job stream (Redis time, ms).
    const stream = await fetch(`${app.url}/v1/jobs/${jobId}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
    });
    const text = await stream.text();
    const written = new Map<string, number>();
    for (const block of text.split('\n\n')) {
      const id = /^id: (\d+)-\d+$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (!id || !data) continue;
      const e = JSON.parse(data) as { type: string; node?: string };
      if (e.type === 'node_start' && e.node && !written.has(e.node)) written.set(e.node, Number(id));
    }
    const entryToColourMs: number[] = [];
    for (let i = 1; i <= ENTRY_NODES; i++) {
      const at = written.get(`n${i}`);
      const seen = changedAt[`n${i}`];
      if (at !== undefined && seen !== undefined) entryToColourMs.push(Math.max(0, seen - at));
    }
    if (entryToColourMs.length < ENTRY_NODES)
      throw new Error(`only ${entryToColourMs.length} of ${ENTRY_NODES} nodes were seen changing`);
    say(`(r) entry → colour: median ${quantile(entryToColourMs, 0.5).toFixed(0)} ms over ${ENTRY_NODES} entries`);
    return {
      firstLoad,
      runPage: { assetBytes, assetRequests, apiBytes, apiRequests },
      entryToColourMs,
    };
  } finally {
    await browser.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Starts recording, in the page, the first moment each graph node's data-state leaves `pending`
 * (epoch ms: performance.timeOrigin + now); the returned function reads what was recorded.
 */
async function watchStates(page: Page): Promise<() => Promise<Record<string, number>>> {
  // A string, not a function: the bench runs under tsx, whose transform would wrap named functions in
  // a helper that does not exist in the page.
  await page.evaluate(`(() => {
    const seen = {};
    window.__states = seen;
    const note = (el) => {
      const id = el.getAttribute('data-node-id');
      const state = el.getAttribute('data-state');
      if (id && state && state !== 'pending' && !(id in seen)) seen[id] = performance.timeOrigin + performance.now();
    };
    document.querySelectorAll('.pw-node[data-node-id]').forEach(note);
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.target instanceof Element && r.target.matches('.pw-node')) note(r.target);
        r.addedNodes.forEach((n) => {
          if (n instanceof Element) n.querySelectorAll('.pw-node[data-node-id]').forEach(note);
        });
      }
    }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['data-state'], childList: true });
  })()`);
  return () => page.evaluate<Record<string, number>>('window.__states');
}

export function sectionR(r: ConsoleResult): string[] {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  return [
    '(r) Console (Chromium, headless)',
    `      first load of /console: ${kb(r.firstLoad.bytes)} transferred (gzip; ${kb(r.firstLoad.rawBytes)} decoded) in ${r.firstLoad.requests} requests`,
    `      run page with its graph after sign-in: assets ${kb(r.runPage.assetBytes)} in ${r.runPage.assetRequests} requests, API ${kb(r.runPage.apiBytes)} in ${r.runPage.apiRequests}`,
    `      stream entry written → node colour changed, over ${r.entryToColourMs.length} entries: median ${quantile(r.entryToColourMs, 0.5).toFixed(0)} ms   p90 ${quantile(r.entryToColourMs, 0.9).toFixed(0)} ms   max ${Math.max(...r.entryToColourMs).toFixed(0)} ms`,
  ];
}
