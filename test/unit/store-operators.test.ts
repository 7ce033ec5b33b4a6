import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The MongoDB query and update operators and aggregation stages the store adapters use
 * (src/kernel/store/** and every src/<area>/*.mongo.ts: store.mongo.ts and its parts, such as
 * usage/budgets.mongo.ts) are the ones docs/store.md lists: the ones the
 * suite exercises on FerretDB 1.24. Using another means adding it to that list (and this one) on
 * purpose, after checking FerretDB 1.x and MongoDB both support it.
 */
const DOCUMENTED = new Set([
  // query
  '$and',
  '$or',
  '$in',
  '$nin',
  '$ne',
  '$lt',
  '$lte',
  '$gt',
  '$gte',
  '$exists',
  '$type',
  '$regex',
  '$options',
  // update
  '$set',
  '$setOnInsert',
  '$unset',
  '$inc',
  '$min',
  '$max',
  '$push',
  // aggregation stages and accumulators
  '$match',
  '$group',
  '$sum',
]);

const ROOT = resolve(import.meta.dirname, '../..');

function files(dir: string, keep: (path: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return files(path, keep);
    return keep(path) ? [path] : [];
  });
}

/** `$name:` or `'$name':` as an object key: an operator or a stage. */
function operatorsIn(text: string): string[] {
  return [...text.matchAll(/['"]?(\$[a-zA-Z]+)['"]?\s*:/g)].map((m) => m[1]);
}

describe('store operators', () => {
  it('the store adapters use only the documented MongoDB operators', () => {
    const adapters = [
      ...files(join(ROOT, 'src/kernel/store'), (p) => p.endsWith('.ts')),
      ...files(join(ROOT, 'src'), (p) => p.endsWith('.mongo.ts')),
    ];
    expect(adapters.length).toBeGreaterThan(20);
    expect(adapters.map((p) => relative(ROOT, p))).toContain('src/usage/budgets.mongo.ts');
    const undocumented = adapters.flatMap((file) =>
      operatorsIn(readFileSync(file, 'utf8'))
        .filter((op) => !DOCUMENTED.has(op))
        .map((op) => `${relative(ROOT, file)}: ${op}`),
    );
    expect(undocumented).toEqual([]);
  });

  it('sees an operator written either way', () => {
    expect(operatorsIn(`{ $lookup: { from: 'x' } }, { '$facet': {} }`)).toEqual(['$lookup', '$facet']);
  });
});
