import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';

/*
 * The TypeScript client as people install it: built to JavaScript and declarations, packed with
 * `npm pack`, installed from the tarball into a project of its own in a temporary folder, then used
 * from a plain Node ESM script (no tsx, no repository paths) against the test API, and type-checked
 * by tsc from a small TypeScript file that relies on the client's `brainId`.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const pkgDir = path.join(root, 'clients/typescript');
const run = promisify(execFile);
const { app } = usePlatform();

let scratch: string | undefined;
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A plain ESM consumer: lists neurons (brain-scoped), invokes one by name, waits, follows, resumes after the end. */
const SCRIPT = `import { createCortexClient, CortexApiError } from '@cortex/client';
const [baseUrl, apiKey, brainId, neuron] = process.argv.slice(2);
const cortex = createCortexClient({ baseUrl, apiKey, brainId });
const list = await cortex.api.GET('/v1/neurons', { params: { query: { limit: 50 } } });
if (!list.data) throw new Error('neurons: ' + list.response.status + ' ' + JSON.stringify(list.error));
const inv = await cortex.api.POST('/v1/neurons/{id}/invoke', {
  params: { path: { id: neuron } },
  body: { message: 'from the package' },
});
if (!inv.data) throw new Error('invoke: ' + inv.response.status + ' ' + JSON.stringify(inv.error));
const job = await cortex.jobs.wait(inv.data.job_id, { intervalMs: 100, timeoutMs: 30000 });
const followed = await cortex.jobs.follow(job.job_id);
const started = Date.now();
const again = await cortex.jobs.follow(job.job_id, { after: followed.lastEventId });
let refused;
try {
  await cortex.jobs.status('00000000-0000-4000-8000-000000000000');
} catch (e) {
  refused = e instanceof CortexApiError ? { status: e.status, code: e.code } : String(e);
}
console.log(JSON.stringify({
  neurons: list.data.neurons.map((n) => n.name),
  status: job.status,
  result: job.result,
  text: followed.text,
  terminal: followed.terminal?.data.type,
  resumedEnded: again.terminal === undefined,
  resumedMs: Date.now() - started,
  refused,
}));
`;

/** A TypeScript consumer: brain-scoped operations without the header on a client made with brainId. */
const CHECK = `import { createCortexClient, type BrainScopedPaths, type CortexClient } from '@cortex/client';

declare const apiKey: string;
const cortex = createCortexClient({ baseUrl: 'http://127.0.0.1:8080', apiKey, brainId: 'brain-id' });
export const neurons = cortex.api.GET('/v1/neurons', { params: { query: { limit: 10 } } });
export const receptors = cortex.api.GET('/v1/receptors');
export const pathways = cortex.api.GET('/v1/pathways', { params: { query: { search: 'triage' } } });
export const typed: CortexClient<BrainScopedPaths> = cortex;
export async function names(): Promise<string[]> {
  const r = await cortex.api.GET('/v1/neurons');
  return (r.data?.neurons ?? []).map((n) => n.name);
}

const plain = createCortexClient({ baseUrl: 'http://127.0.0.1:8080', apiKey });
// @ts-expect-error without a brainId the operation's X-Brain-Id header is required
export const refused = plain.api.GET('/v1/neurons');
export const named = plain.api.GET('/v1/neurons', { params: { header: { 'x-brain-id': 'brain-id' } } });
// @ts-expect-error a query parameter keeps its type
export const wrong = cortex.api.GET('/v1/neurons', { params: { query: { limit: 'ten' } } });
`;

describe('the TypeScript client package', () => {
  it('builds, packs, installs from the tarball and works from plain Node and under tsc', async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'cortex-client-pkg-'));
    const npm = (args: string[], cwd: string) =>
      run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, timeout: 45_000 });

    // `npm pack` runs the package's prepack script: tsc to dist/ (ESM JavaScript and .d.ts).
    await npm(['pack', '--pack-destination', scratch], pkgDir);
    const tarball = (await readdir(scratch)).find((f) => f.endsWith('.tgz'));
    expect(tarball).toMatch(/^cortex-client-\d+\.\d+\.\d+\.tgz$/);
    const { stdout: listing } = await run('tar', ['-tzf', path.join(scratch, tarball!)]);
    expect(listing.split('\n').sort()).toEqual(
      expect.arrayContaining(['package/dist/index.js', 'package/dist/index.d.ts', 'package/package.json']),
    );
    expect(listing).not.toContain('package/src/');

    const project = path.join(scratch, 'project');
    await run('mkdir', ['-p', project]);
    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    // Its dependencies come from npm's cache when there (the repository's own install put them there).
    await npm(['install', '--prefer-offline', path.join(scratch, tarball!)], project);

    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'pkg-echo',
      brain_id: ws.brainId,
      neuron_config: { model: 'local/echo' },
    });
    expect(n.status).toBe(201);
    await writeFile(path.join(project, 'script.mjs'), SCRIPT);
    const { stdout } = await run(process.execPath, ['script.mjs', app.url, ws.key, ws.brainId, 'pkg-echo'], {
      cwd: project,
      timeout: 40_000,
    });
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(out).toMatchObject({
      neurons: ['pkg-echo'],
      status: 'completed',
      result: { text: expect.stringContaining('from the package') },
      text: expect.stringContaining('from the package'),
      terminal: 'complete',
      resumedEnded: true,
      refused: { status: 404, code: 'NOT_FOUND' },
    });
    expect(out.resumedMs).toBeLessThan(2_000);

    await writeFile(path.join(project, 'check.ts'), CHECK);
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: [],
          strict: true,
          noEmit: true,
        },
        files: ['check.ts'],
      }),
    );
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    const checked = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project, timeout: 40_000 }).then(
      () => 'ok',
      (e: { stdout?: string }) => e.stdout ?? String(e),
    );
    expect(checked).toBe('ok');
  }, 90_000);
});
