import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createApp } from '../../api/app.js';
import { ApiKey, ApiKeyCreated, Health, SessionContext } from '../../src/platform/schemas.js';
import { createServices } from '../../src/compose/services.js';
import { pingRedis } from '../../src/kernel/redis.js';
import { buildWorkspace, makeClient, startTestApp, useTestApp } from '../support/app.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const app = useTestApp();

describe('health and session', () => {
  it('GET /health and /v1/health answer healthy with a version, unauthenticated', async () => {
    for (const p of ['/health', '/v1/health']) {
      const r = await app.get(p);
      expect(r.status).toBe(200);
      expect(Health.parse(r.body)).toMatchObject({ status: 'healthy' });
      expect(r.body.workspace).toBeUndefined();
      expect(typeof r.body.version).toBe('string');
    }
  });

  it('with an API key, health adds workspace context', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.get('/v1/health', ws.key);
    expect(Health.parse(r.body).workspace?.id).toBe(ws.workspaceId);
  });

  it('says unhealthy (503) when a component is unreachable', async () => {
    // A Redis nobody answers at (a plain client whatever the suite's topology), as the health check's ping sees it.
    const dead = new Redis({
      host: '127.0.0.1',
      port: 1,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    }).on('error', () => undefined);
    const deps = { ...app.deps, redis: dead, pings: { ...app.deps.pings, redis: () => pingRedis(dead) } };
    const server = createServer(createApp(deps, { ...createServices(deps), auth: app.services.auth }).callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const client = makeClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      const r = await client.get('/health');
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ status: 'unhealthy' });
    } finally {
      server.close();
      dead.disconnect();
    }
  });

  it('GET /v1/session/context describes the credential', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.get('/v1/session/context', ws.key, ws.brainHeaders);
    const ctx = SessionContext.parse(r.body);
    expect(ctx.workspace.id).toBe(ws.workspaceId);
    expect(ctx.brain?.id).toBe(ws.brainId);
    expect(ctx.roles).toContain('workspace_admin');
    expect((await app.get('/v1/session/context')).status).toBe(401);
  });
});

describe('API keys and JWTs', () => {
  it('api-key routes accept a JWT only; a key is shown once and stored hashed', async () => {
    const ws = await buildWorkspace(app);
    const jwt = await ws.jwt(['workspace_admin']);
    const byKey = await app.post('/v1/api-keys', ws.key, { name: 'x' });
    expect(byKey.status).toBe(403);
    expect(byKey.body).toMatchObject({ code: 'FORBIDDEN' });
    const created = await app.post('/v1/api-keys', jwt, { name: 'ci' });
    expect(created.status).toBe(201);
    const key = ApiKeyCreated.parse(created.body);
    const stored = await app.deps.db.collection('api_keys').findOne({ _id: key.id as never });
    expect(JSON.stringify(stored)).not.toContain(key.key);
    expect((await app.get('/v1/traces', key.key)).status).toBe(200);
    const list = await app.get<{ api_keys: unknown[] }>('/v1/api-keys', jwt);
    const keys = list.body.api_keys.map((k) => ApiKey.parse(k));
    expect(keys.map((k) => k.id)).toContain(key.id);
    expect(JSON.stringify(list.body)).not.toContain(key.key);
    expect((await app.del(`/v1/api-keys/${key.id}`, jwt)).body).toEqual({ success: true });
    expect((await app.get('/v1/traces', key.key)).status).toBe(401);
    expect((await app.del(`/v1/api-keys/${key.id}`, jwt)).status).toBe(404);
    expect((await app.post('/v1/api-keys', jwt, { name: '' })).status).toBe(400);
  });

  it('a member cannot grant admin; a JWT for a new workspace provisions it', async () => {
    const ws = await buildWorkspace(app);
    const member = await ws.jwt(['member']);
    expect((await app.post('/v1/api-keys', member, { name: 'x', roles: ['workspace_admin'] })).status).toBe(403);
    expect((await app.post('/v1/brains', member, { name: 'b' })).status).toBe(403);
    const fresh = await app.services.auth.signJwt({
      sub: randomUUID(),
      workspace_id: randomUUID(),
      roles: ['workspace_admin'],
    });
    const r = await app.get('/v1/session/context', fresh);
    expect(r.status).toBe(200);
  });

  it('rejects a JWT with a bad signature or bad claims', async () => {
    const { SignJWT } = await import('jose');
    const bad = await new SignJWT({ workspace_id: randomUUID(), roles: [] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(randomUUID())
      .sign(new TextEncoder().encode('another-secret-0123456789'));
    expect((await app.get('/v1/traces', bad)).status).toBe(401);
    const noWs = await new SignJWT({ roles: [] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(randomUUID())
      .sign(new TextEncoder().encode(app.config.JWT_SECRET));
    expect((await app.get('/v1/traces', noWs)).status).toBe(401);
  });
});

describe('errors, rate limits, retired routes', () => {
  it('POST /v1/chat/:traceId answers 410 with the error body', async () => {
    const r = await app.post(`/v1/chat/${randomUUID()}`, undefined, { message: 'hi' });
    expect(r.status).toBe(410);
    expect(r.body).toMatchObject({ code: 'GONE' });
    expect(typeof r.body.message).toBe('string');
  });

  it('unknown routes are a 404 with the error body', async () => {
    const r = await app.get('/v1/nope');
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('answers 429 RATE_LIMIT with Retry-After after the per-credential limit', async () => {
    const limited = await startTestApp({ RATE_LIMIT_POINTS: 5, RATE_LIMIT_DURATION_S: 60 });
    try {
      const ws = await buildWorkspace(limited);
      const other = await buildWorkspace(limited);
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await limited.get('/v1/traces', ws.key)).status);
      expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
      const r = await limited.get('/v1/traces', ws.key);
      expect(r.status).toBe(429);
      expect(r.body).toMatchObject({ code: 'RATE_LIMIT' });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      // Limits are per credential: another key is unaffected.
      expect((await limited.get('/v1/traces', other.key)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
