/**
 * `npm run build`: the services in their production form, in `dist/`.
 *
 * - TypeScript compiled to JavaScript by `tsc -p tsconfig.build.json` (api, src, worker,
 *   activities, workflows, snake), so `node dist/api/server.js` runs without tsx: no loader
 *   thread, no transpiling at start, less memory (docs/decisions.md, "Compiled services and memory").
 * - Static files copied beside the compiled modules that serve them (api/pages, snake/public:
 *   both resolve them relative to themselves).
 * - The workflow bundle (`dist/workflow-bundle.js`) with the workflow interceptors every worker
 *   bundle must carry; a worker given it with CORTEX_WORKFLOW_BUNDLE skips webpack at start.
 * - The console (docs/console.md): Vite builds console/src into console/dist, which the API serves
 *   at /console (api/console.ts, relative to itself), then it is copied beside the compiled API.
 *
 * Development keeps running the TypeScript through tsx (`npm run up`, `npm test`): this output is
 * for images and for measuring the services as they run in production (`npm run bench`, (i)).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { workflowBundleOptions } from '../worker/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
/** Builds dist/ (see the module comment); `say` receives one line per step. */
export async function build(say: (line: string) => void = (l) => console.log(`[build] ${l}`)): Promise<void> {
  let t = performance.now();
  await rm(DIST, { recursive: true, force: true });
  say('compiling TypeScript (tsc -p tsconfig.build.json) …');
  const tsc = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    { cwd: ROOT, stdio: 'inherit' },
  );
  if (tsc.status !== 0) throw new Error(`tsc exited ${tsc.status ?? tsc.signal}`);
  say(`compiled in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  await buildConsole(say);

  // Static files the compiled modules serve relative to themselves.
  for (const dir of ['api/pages', 'snake/public', 'console/dist'])
    await cp(path.join(ROOT, dir), path.join(DIST, dir), { recursive: true });
  say('copied api/pages, snake/public and console/dist');

  t = performance.now();
  say('bundling workflows …');
  const bundle = await bundleWorkflowCode({ ...workflowBundleOptions, logger: new DefaultLogger('WARN') });
  await mkdir(DIST, { recursive: true });
  await writeFile(path.join(DIST, 'workflow-bundle.js'), bundle.code);
  say(
    `dist/workflow-bundle.js (${Math.round(bundle.code.length / 1024)} KiB, ${((performance.now() - t) / 1000).toFixed(1)} s)`,
  );
  say(
    'run: node dist/api/server.js · CORTEX_WORKFLOW_BUNDLE=dist/workflow-bundle.js node dist/worker/index.js · node dist/snake/server.js',
  );
}

/**
 * `vite build` of the console into console/dist (what `npm run up` and the tests serve from the
 * sources' tree, and what `build` copies into dist/). Also run by provisioning when the built assets
 * are missing or older than their sources (scripts/provision.sh).
 */
export async function buildConsole(say: (line: string) => void = (l) => console.log(`[build] ${l}`)): Promise<void> {
  const t = performance.now();
  say('building the console (vite build --config console/vite.config.ts) …');
  const vite = path.join(ROOT, 'node_modules/vite/bin/vite.js');
  if (!existsSync(vite)) throw new Error('vite is missing: run npm ci');
  const r = spawnSync(process.execPath, [vite, 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error(`vite build exited ${r.status ?? r.signal}`);
  say(`console/dist built in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  build().catch((err: unknown) => {
    console.error(`[build] failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
