import { beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes/index.js';
import { OPENAI_PREFIX } from '../../api/openai/errors.js';
import type { RouteDef } from '../../api/route.js';
import { buildWorkspace, useTestApp } from '../support/app.js';
import { MISSING, useRouteWorld, type RouteWorld } from '../support/route-world.js';

/**
 * Threat class: a credential reaching what its role, its pathway role or its workspace does not
 * allow (docs/security.md). The attackers are a member of workspace A (a JWT with no roles and
 * that user's own API key), a pathway participant below the route's resource role, an anonymous
 * caller, a share link of another receptor, and the admin of workspace B.
 *
 * A NEW ROUTE CANNOT BE ADDED WITHOUT ITS ROW: the first test fails for every mounted route whose
 * path parameters, query or body the route world cannot fill — add its fixture in
 * test/support/route-world.ts (test/security/prototype-keys.test.ts walks the same world).
 *
 * The authorization suite, generated from the mounted route table (docs/roles.md): every route
 * is checked from its own declaration (auth mode, route-level roles, per-resource role, path
 * parameters), so a route joins by being mounted. For each route:
 *   - without a credential → 401 (unless the route is public);
 *   - a JWT-only route with an API key → 403;
 *   - a role below the route's `roles` → 403;
 *   - a per-resource role below `resourceRole` → 403, through a JWT and through that user's own API key;
 *   - a credential of another workspace, naming this workspace's resources → 404.
 */
const app = useTestApp();
const world = useRouteWorld(app);
const { fill, bodyFor, queryFor } = world;
let w: RouteWorld;
beforeAll(() => {
  w = world.w;
});

const call = (def: RouteDef, path: string, auth: string | undefined, headers: Record<string, string> = {}) =>
  app.request(def.method.toUpperCase(), path + queryFor(def), { auth, body: bodyFor(def), headers });

const routes = allRoutes();
const authed = routes.filter((r) => (r.auth ?? 'required') === 'required' || r.auth === 'jwt');

describe('authorization, generated from the route table', () => {
  it('every mounted route has fixtures for its parameters and body', () => {
    const missing = routes
      .filter((r) => r.auth !== 'none')
      .filter((r) => fill(r.path) === undefined || bodyFor(r) === MISSING);
    expect(missing.map((r) => `${r.method.toUpperCase()} ${r.path}`)).toEqual([]);
  });

  it.each(authed.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    '%s: no credential → 401',
    async (_, def) => {
      const res = await call(def, fill(def.path) ?? def.path, undefined);
      expect(res.status).toBe(401);
      // The OpenAI-compatible routes answer in OpenAI's error shape (docs/openai-compatible.md).
      expect(res.body).toMatchObject(
        def.path.startsWith(`${OPENAI_PREFIX}/`) ? { error: { code: 'invalid_api_key' } } : { code: 'AUTH_REQUIRED' },
      );
    },
  );

  const jwtOnly = routes.filter((r) => r.auth === 'jwt');
  it.each(jwtOnly.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    '%s: an API key → 403 (JWT only)',
    async (_, def) => {
      const res = await call(def, fill(def.path)!, w.a.key);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FORBIDDEN' });
    },
  );

  const withRoles = routes.filter((r) => (r.roles ?? []).length > 0);
  it.each(withRoles.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    '%s: a member (JWT and own API key) → 403',
    async (_, def) => {
      for (const cred of def.auth === 'jwt' ? [w.member.jwt] : [w.member.jwt, w.member.key]) {
        const res = await call(def, fill(def.path)!, cred, w.a.brainHeaders);
        expect(res.status).toBe(403);
        expect(res.body).toMatchObject({ code: 'FORBIDDEN' });
      }
    },
  );

  const withResourceRole = routes.filter((r) => r.resourceRole);
  it.each(withResourceRole.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    '%s: a participant below the resource role (JWT and own API key) → 403',
    async (_, def) => {
      const below = def.resourceRole!.role === 'owner' ? [w.viewer, w.editor] : [w.viewer];
      for (const u of below) {
        for (const cred of [u.jwt, u.key]) {
          const res = await call(def, fill(def.path)!, cred, w.a.brainHeaders);
          expect(res.status, `${def.method} ${def.path}`).toBe(403);
          expect(res.body).toMatchObject({ code: 'FORBIDDEN' });
        }
      }
    },
  );

  const naming = authed.filter((r) => r.path.includes(':'));
  it.each(naming.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    "%s: another workspace's admin naming this workspace's resources → 404",
    async (_, def) => {
      const other = await buildWorkspace(app); // a fresh one per route: no test sees another's side effects
      const cred = def.auth === 'jwt' ? await other.jwt(['workspace_admin']) : other.key;
      const engrams = async () =>
        (await app.get<{ engrams: unknown[] }>(`/v1/traces/${w.ids.trace}/messages`, w.a.key)).body.engrams.length;
      const before = def.createsByPath ? await engrams() : 0;
      const res = await call(def, fill(def.path)!, cred);
      if (def.createsByPath) {
        // The id names the caller's own resource, created on first use: this workspace's one is untouched.
        expect(res.status).toBeLessThan(300);
        expect(await engrams()).toBe(before);
        return;
      }
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'NOT_FOUND' });
    },
  );

  // Share links (docs/shares.md): every route that takes a share token refuses one of another receptor (link B naming A's
  // resources): A's receptor is a 403; a trace or job that is not one of B's own (naming B itself) is a 404, as a missing one.
  const shareOnly = routes.filter((r) => r.share);
  it.each(shareOnly.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    "%s: another receptor's share token → 403 (its trace or job: 404), no token → 401",
    async (_, def) => {
      const byId = def.path.includes('/jobs/') || def.path.includes('/traces/');
      const names = byId ? `&receptor_id=${w.ids.receptorB}` : '';
      const path = fill(def.path)!
        .replace(':id', w.ids.shareTrace)
        .replace(/\/v1\/traces\/[^/]+/, `/v1/traces/${w.ids.shareTrace}`);
      const body = def.method === 'post' && def.path.endsWith('/execute') ? { message: 'm' } : undefined;
      const res = await app.request(def.method.toUpperCase(), `${path}?t=${w.ids.shareB}${names}`, { body });
      expect(res.status, res.text).toBe(byId ? 404 : 403);
      expect(res.body).toMatchObject({ code: byId ? 'NOT_FOUND' : 'FORBIDDEN' });
      const none = await app.request(def.method.toUpperCase(), `${path}?receptor_id=${w.ids.receptor}`, { body });
      expect(none.status).toBe(401);
    },
  );
});
