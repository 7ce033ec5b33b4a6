import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';

/**
 * Every module a workflow imports is evaluated again for each new run (Temporal's reusable V8
 * context keeps a module cache per workflow), so what the workflows import eagerly is paid at the
 * start of every run (docs/decisions.md, "Workflow bundle").
 */
describe('workflow bundle', () => {
  const code = readFileSync(inject('workflowBundlePath'), 'utf8');

  it('does not contain zod (the interpreter imports src/pathways/walk.ts, not the zod shapes)', () => {
    expect(code).not.toMatch(/^\/\*\*\*\/ "\.\/node_modules\/zod\//m);
  });

  it('loads the OpenTelemetry workflow interceptors only where a traced run asks for them', () => {
    // The module is in the bundle, but no module requires it at evaluation: only the deferred
    // `require` inside workflows/interceptors.ts names it.
    const requires =
      code.match(
        /__webpack_require__\([^)]*"\.\/node_modules\/@temporalio\/interceptors-opentelemetry\/lib\/workflow\/index\.js"\)/g,
      ) ?? [];
    expect(requires).toHaveLength(1);
    const at = code.indexOf(String(requires[0]));
    expect(code.slice(Math.max(0, at - 40), at)).toMatch(/const otel = \(\)\s*=>\s*$/);
  });
});
