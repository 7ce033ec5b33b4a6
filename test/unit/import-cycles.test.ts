import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The server code's import graph has no cycle, counting type-only imports too. `import-x/no-cycle`
 * in eslint.config.js skips `import type` and is slow over the whole tree; this walks the same
 * graph with TypeScript's own module resolution (`./x.js` → `./x.ts`, as tsc compiles it), so a
 * cycle of either kind fails here in a second. Break one by moving the shared types or constants
 * into a small module both sides import.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const FOLDERS = ['src', 'api', 'workflows', 'activities', 'worker'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every file's local imports (value, type, re-export and dynamic), resolved to files. */
function importGraph(): Map<string, string[]> {
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const files = FOLDERS.flatMap((folder) => sources(join(ROOT, folder)));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = new Set<string>();
    for (const ref of info.importedFiles) {
      if (!ref.fileName.startsWith('.')) continue;
      const resolved = ts.resolveModuleName(ref.fileName, file, options, host).resolvedModule;
      if (resolved && !resolved.isExternalLibraryImport) targets.add(resolve(resolved.resolvedFileName));
    }
    graph.set(resolve(file), [...targets]);
  }
  return graph;
}

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found.map((component) => component.map((file) => relative(ROOT, file)).sort());
}

describe('import graph', () => {
  it('has no cycle in src, api, workflows, activities or worker (type-only imports included)', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(200);
    expect(cycles(graph)).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const graph = new Map([
      ['/a.ts', ['/b.ts']],
      ['/b.ts', ['/c.ts']],
      ['/c.ts', ['/a.ts']],
      ['/d.ts', ['/a.ts']],
    ]);
    expect(cycles(graph).map((component) => component.length)).toEqual([3]);
  });
});
