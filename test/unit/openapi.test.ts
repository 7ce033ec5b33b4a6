import { describe, expect, it } from 'vitest';
import { buildOpenApi, toOpenApiPath } from '../../api/openapi.js';
import { allRoutes } from '../../api/routes/index.js';

describe('OpenAPI document', () => {
  it('documents every mounted route with its method', () => {
    const routes = allRoutes();
    const doc = buildOpenApi(routes);
    for (const r of routes) {
      const item = doc.paths?.[toOpenApiPath(r.path)] as Record<string, unknown> | undefined;
      expect(item?.[r.method], `${r.method.toUpperCase()} ${r.path}`).toBeDefined();
    }
    expect(routes.length).toBeGreaterThan(60);
  });

  it('no two routes claim the same method and path', () => {
    const keys = allRoutes().map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
