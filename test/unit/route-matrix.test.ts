import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MATRIX_BEGIN, MATRIX_END, routeMatrix, withRouteMatrix } from '../../api/route-matrix.js';
import { allRoutes } from '../../api/routes/index.js';

describe("docs/security.md's route table", () => {
  it('has one row per mounted route, equal to the routes as declared (npm run security:matrix rewrites it)', () => {
    const doc = readFileSync('docs/security.md', 'utf8');
    const routes = allRoutes();
    const table = doc.slice(doc.indexOf(MATRIX_BEGIN) + MATRIX_BEGIN.length, doc.indexOf(MATRIX_END)).trim();
    expect(table.split('\n')).toHaveLength(routes.length + 2);
    expect(table).toBe(routeMatrix(routes));
  });

  it('a route added without its row, or with another role, no longer matches', () => {
    const routes = allRoutes();
    const doc = withRouteMatrix(`${MATRIX_BEGIN}\n${MATRIX_END}\n`, routes);
    const extra = { ...routes[0], path: '/v1/new-thing', roles: ['workspace_admin' as const] };
    expect(withRouteMatrix(doc, [...routes, extra])).not.toBe(doc);
    const demoted = routes.map((r) => (r.roles?.includes('workspace_admin') ? { ...r, roles: undefined } : r));
    expect(withRouteMatrix(doc, demoted)).not.toBe(doc);
  });
});
