import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace, startTestApp, useTestApp, type TestApp } from '../support/app.js';

/**
 * Threat class: a bearer token that never stops working (docs/security.md). The actor holds a JWT
 * signed with the platform's secret (a leaked one, an old one, or one an identity provider issued
 * without expiry) or forges one without the secret; what they must never reach is a session
 * that outlives JWT_MAX_LIFETIME_SECONDS, or any session at all without a valid HS256 signature.
 */
const app = useTestApp();
const now = () => Math.floor(Date.now() / 1000);
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

async function sign(
  a: TestApp,
  claims: Record<string, unknown>,
  opts: { alg?: string; secret?: string } = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: opts.alg ?? 'HS256' })
    .sign(new TextEncoder().encode(opts.secret ?? a.config.JWT_SECRET));
}

async function refused(a: TestApp, token: string, message: RegExp) {
  const r = await a.get('/v1/session/context', token);
  expect(r.status, r.text).toBe(401);
  expect(r.body.code).toBe('AUTH_REQUIRED');
  expect(String(r.body.message)).toMatch(message);
}

describe('JWTs must expire, within the maximum lifetime', () => {
  it('a JWT without exp is refused with a message that says so', async () => {
    const ws = await buildWorkspace(app);
    const token = await sign(app, {
      sub: randomUUID(),
      workspace_id: ws.workspaceId,
      roles: ['workspace_admin'],
      iat: now(),
    });
    await refused(app, token, /no exp claim/);
    // The same claims with an exp an hour away are accepted: the refusal is the missing exp.
    const ok = await sign(app, {
      sub: randomUUID(),
      workspace_id: ws.workspaceId,
      roles: ['workspace_admin'],
      iat: now(),
      exp: now() + 3600,
    });
    expect((await app.get('/v1/session/context', ok)).status).toBe(200);
  });

  it('a JWT that lives longer than JWT_MAX_LIFETIME_SECONDS (24 h by default) is refused, with or without iat', async () => {
    const ws = await buildWorkspace(app);
    const base = { sub: randomUUID(), workspace_id: ws.workspaceId, roles: ['workspace_admin'] };
    const year = 365 * 86_400;
    await refused(app, await sign(app, { ...base, iat: now(), exp: now() + year }), /lifetime/);
    await refused(app, await sign(app, { ...base, exp: now() + 2 * 86_400 }), /lifetime/);
    // An iat in the future does not shorten the lifetime: exp is measured from now.
    await refused(app, await sign(app, { ...base, iat: now() + year, exp: now() + year + 60 }), /lifetime/);
    // Issued a day ago and valid for another hour: 25 h in all.
    await refused(app, await sign(app, { ...base, iat: now() - 86_400, exp: now() + 3600 }), /lifetime/);
    // Exactly within the limit is accepted.
    expect(
      (await app.get('/v1/session/context', await sign(app, { ...base, iat: now(), exp: now() + 86_000 }))).status,
    ).toBe(200);
  });

  it('an expired JWT, one not valid yet (nbf) and an exp that is not a number are refused', async () => {
    const ws = await buildWorkspace(app);
    const base = { sub: randomUUID(), workspace_id: ws.workspaceId, roles: [] };
    await refused(app, await sign(app, { ...base, iat: now() - 7200, exp: now() - 3600 }), /expired/i);
    await refused(app, await sign(app, { ...base, iat: now(), nbf: now() + 3600, exp: now() + 7200 }), /nbf/);
    await refused(app, await sign(app, { ...base, iat: now(), exp: String(now() + 3600) }), /Invalid/);
  });

  it('the header never chooses the algorithm: alg none, HS512 and a wrong secret are refused', async () => {
    const ws = await buildWorkspace(app);
    const claims = { sub: randomUUID(), workspace_id: ws.workspaceId, roles: ['workspace_admin'], exp: now() + 600 };
    await refused(app, `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.x`, /Invalid/);
    await refused(app, await sign(app, claims, { alg: 'HS512' }), /Invalid/);
    await refused(app, await sign(app, claims, { secret: 'another-secret-0123456789abcdef' }), /Invalid/);
    // Nothing was provisioned for the forged workspace either: the credential never authenticated.
    const forged = randomUUID();
    await refused(app, `${b64({ alg: 'none' })}.${b64({ ...claims, workspace_id: forged })}.x`, /Invalid/);
    expect(await app.deps.db.collection('workspaces').findOne({ _id: forged as never })).toBeNull();
  });

  it("the test helpers' JWTs carry exp (ws.jwt)", async () => {
    const ws = await buildWorkspace(app);
    const token = await ws.jwt([]);
    const payload = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { exp?: number };
    expect(payload.exp).toBeGreaterThan(now());
    expect((await app.get('/v1/session/context', token)).status).toBe(200);
  });
});

describe('configured lifetime, issuer and audience', () => {
  let strict: TestApp & { close(): Promise<void> };
  beforeAll(async () => {
    strict = await startTestApp({
      JWT_MAX_LIFETIME_SECONDS: 600,
      JWT_ISSUER: 'https://idp.example',
      JWT_AUDIENCE: 'cortex',
    });
  });
  afterAll(async () => {
    await strict?.close();
  });

  it('JWT_MAX_LIFETIME_SECONDS, JWT_ISSUER and JWT_AUDIENCE are enforced when set', async () => {
    const ws = await buildWorkspace(strict);
    const base = { sub: randomUUID(), workspace_id: ws.workspaceId, roles: [], iat: now() };
    const good = { ...base, iss: 'https://idp.example', aud: 'cortex', exp: now() + 300 };
    expect((await strict.get('/v1/session/context', await sign(strict, good))).status).toBe(200);
    await refused(strict, await sign(strict, { ...good, exp: now() + 3600 }), /lifetime.*600/);
    await refused(strict, await sign(strict, { ...good, iss: 'https://evil.example' }), /iss/);
    await refused(strict, await sign(strict, { ...good, iss: undefined }), /iss/);
    await refused(strict, await sign(strict, { ...good, aud: 'another-api' }), /aud/);
  });
});
