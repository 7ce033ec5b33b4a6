import type { RouteDef } from './route.js';

/**
 * The "who may do what" table of docs/security.md, made from the mounted route table: one row per
 * route with the credential it takes, the route-level role, the per-resource role and whether a
 * brain or a share link scopes it. `npm run security:matrix` writes it into the doc between its
 * markers; test/security/authorization.test.ts fails when the doc's table differs, so a route
 * cannot be added, or its roles changed, without its row.
 */
export const MATRIX_BEGIN = '<!-- route-matrix:begin (npm run security:matrix) -->';
export const MATRIX_END = '<!-- route-matrix:end -->';

const CREDENTIAL: Record<NonNullable<RouteDef['auth']>, string> = {
  required: 'API key or JWT',
  jwt: 'JWT only',
  optional: 'none (a JWT only attributes)',
  none: 'none',
  operator: 'operator token (OPERATOR_TOKEN)',
};

function credential(r: RouteDef): string {
  if (r.share === 'only') return 'share link (a JWT only attributes)';
  const base = CREDENTIAL[r.auth ?? 'required'];
  return r.share === 'accept' ? `${base}, or a share link` : base;
}

function role(r: RouteDef): string {
  if (r.share === 'only' || r.auth === 'none' || r.auth === 'optional') return '—';
  if (r.auth === 'operator') return 'platform operator';
  const roles = r.roles ?? [];
  if (roles.includes('core_admin')) return 'core_admin';
  if (roles.includes('workspace_admin')) return 'workspace_admin';
  return 'member';
}

/** The table (markdown), one row per route in mount order. */
export function routeMatrix(routes: RouteDef[]): string {
  const rows = routes.map((r) => {
    const cells = [
      `${r.method.toUpperCase()} \`${r.path}\``,
      credential(r),
      role(r),
      r.resourceRole ? `${r.resourceRole.kind} ${r.resourceRole.role}` : '—',
      r.brain ?? '—',
    ];
    return `| ${cells.join(' | ')} |`;
  });
  return ['| route | credential | least role | resource role | brain |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** `doc` with the text between the markers replaced by the table. */
export function withRouteMatrix(doc: string, routes: RouteDef[]): string {
  const start = doc.indexOf(MATRIX_BEGIN);
  const end = doc.indexOf(MATRIX_END);
  if (start < 0 || end < start) throw new Error('docs/security.md: the route-matrix markers are missing');
  return `${doc.slice(0, start + MATRIX_BEGIN.length)}\n${routeMatrix(routes)}\n${doc.slice(end)}`;
}
