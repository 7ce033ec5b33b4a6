import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const KERNEL = join(ROOT, 'src/kernel');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('the kernel', () => {
  // The event map (src/kernel/events.ts) names the entity types its events carry: type-only imports
  // (erased at build, no module evaluated) are the one way out of the kernel.
  it('imports no value of the areas, services or repositories: every area may use it, it uses none', () => {
    const outside: string[] = [];
    for (const file of files(KERNEL)) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^import (?!type )[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms)) {
        const target = resolve(dirname(file), m[1]!);
        if (!target.startsWith(KERNEL + '/')) outside.push(`${relative(ROOT, file)} → ${m[1]}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
