/**
 * The storage boundary (docs/architecture.md, "Storage boundary"): repositories offer domain
 * operations only, never a driver collection, so services cannot reach past them. And every
 * repository has its conformance file here (docs/store.md): a store adapter added without one is
 * refused below.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exposedCollections, openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

describe('storage boundary', () => {
  it('no repository exposes a driver collection', () => {
    for (const backend of h.backends) {
      const repos = h.repos(backend);
      const exposed = Object.entries(repos).flatMap(([area, repo]) =>
        exposedCollections(repo as object).map((name) => `${area}.${name}`),
      );
      expect(exposed).toEqual([]);
    }
  });
});

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Where a repository file's conformance tests are, when not under its own name
 * (src/<area>/store.mongo.ts: <area>.test.ts; src/<area>/<name>.mongo.ts: <name>.test.ts). null: not a repository (the driver plumbing every repository shares).
 */
const CONFORMANCE_FILE: Record<string, string | null> = {
  'src/kernel/store/client.ts': null,
  'src/kernel/store/guard.ts': null,
  // Parts of a repository, checked through the repository they belong to.
  'src/traces/engrams.mongo.ts': 'traces',
  'src/pathways/trails.mongo.ts': 'pathway-trails',
  'src/knowledge/chunks.mongo.ts': 'knowledge',
  'src/knowledge/documents.mongo.ts': 'knowledge',
  'src/knowledge/memories.mongo.ts': 'knowledge',
  'src/knowledge/owners.mongo.ts': 'knowledge',
  'src/knowledge/rows.mongo.ts': 'knowledge',
  'src/receptors/firings.mongo.ts': 'receptors',
  'src/meetings/transcription.mongo.ts': 'meetings',
  'src/stakeholders/graphs.mongo.ts': 'stakeholder-maps',
  'src/stakeholders/store.mongo.ts': 'stakeholder-maps',
};

/** Files of the repositories' own subjects beside them (not one repository's). */
const NOT_OF_ONE_REPOSITORY = ['boundary', 'store-atomic'];

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** A store adapter: a `*.mongo.ts` file, or a source file that opens a driver collection or builds store operations over a Db. */
function repositoryFiles(root: string): string[] {
  const adapter = (text: string) =>
    /\.collection\s*[<(]/.test(text) || /export function create\w+\(\s*db: Db\b/.test(text);
  return files(join(root, 'src'))
    .filter((p) => p.endsWith('.mongo.ts') || adapter(readFileSync(p, 'utf8')))
    .map((p) => relative(root, p))
    .sort();
}

/** The conformance file's name (without `.test.ts`) a repository file is checked by. */
function conformanceName(file: string): string | null {
  if (file in CONFORMANCE_FILE) return CONFORMANCE_FILE[file];
  const store = /^src\/([^/]+)\/store\.mongo\.ts$/.exec(file);
  if (store) return store[1];
  const named = /^src\/[^/]+\/([^/]+)\.mongo\.ts$/.exec(file);
  return named ? named[1] : file;
}

describe('repository conformance files', () => {
  const tests = new Set(
    readdirSync(join(ROOT, 'test/repos'))
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => f.replace(/\.test\.ts$/, '')),
  );
  const repos = repositoryFiles(ROOT);

  it('finds the repositories', () => {
    expect(repos).toContain('src/jobs/store.mongo.ts');
    expect(repos).toContain('src/webhooks/store.mongo.ts');
    expect(repos.length).toBeGreaterThan(25);
  });

  it('every repository has a conformance file in test/repos', () => {
    const missing = repos.flatMap((file) => {
      const name = conformanceName(file);
      return name === null || tests.has(name) ? [] : [`${file}: test/repos/${name}.test.ts`];
    });
    expect(missing).toEqual([]);
  });

  it('the explicit mapping names only files that exist, and every conformance file checks a repository', () => {
    expect(Object.keys(CONFORMANCE_FILE).filter((f) => !repos.includes(f))).toEqual([]);
    const targets = new Set(repos.map(conformanceName));
    expect([...tests].filter((t) => !targets.has(t) && !NOT_OF_ONE_REPOSITORY.includes(t))).toEqual([]);
  });

  it('names a missing file for a repository added without one', () => {
    expect(conformanceName('src/widgets/store.mongo.ts')).toBe('widgets');
    expect(conformanceName('src/usage/budgets.mongo.ts')).toBe('budgets');
    expect(conformanceName('src/gadgets/parts.mongo.ts')).toBe('parts');
    expect(tests.has('widgets')).toBe(false);
  });
});
