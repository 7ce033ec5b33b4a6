import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKeyDoc } from '../../src/platform/index.js';
import { hashApiKey, newApiKeySecret } from '../../src/platform/auth.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';

/**
 * Regressions for the authorization findings of issue 9, each checked from outside: key
 * ownership, per-resource roles through API keys, secrets in logs, production configuration,
 * abuse limits, error bodies on every status, and a bootstrap that cannot collide.
 */
const logLines: string[] = [];
let app: TestApp & { close(): Promise<void> };
let limited: TestApp & { close(): Promise<void> };
let proxied: TestApp & { close(): Promise<void> };
/** Two API processes of one installation (one store, one Redis prefix), both reached from 127.0.0.1. */
let first: TestApp & { close(): Promise<void> };
let second: TestApp & { close(): Promise<void> };

beforeAll(async () => {
  app = await startTestApp({}, { logLines });
  limited = await startTestApp({ AUTH_FAILURES_PER_MINUTE: 5 });
  proxied = await startTestApp({ AUTH_FAILURES_PER_MINUTE: 5, TRUST_PROXY_HOPS: 1 });
  const tag = randomUUID().slice(0, 8);
  first = await startTestApp({
    AUTH_FAILURES_PER_MINUTE: 5,
    MONGODB_DB: `cortex_lock${tag}`,
    REDIS_PREFIX: `lock${tag}:`,
  });
  second = await startTestApp({
    AUTH_FAILURES_PER_MINUTE: 5,
    MONGODB_DB: `cortex_lock${tag}`,
    REDIS_PREFIX: `lock${tag}:`,
  });
});
afterAll(async () => {
  await Promise.all([app?.close(), limited?.close(), proxied?.close(), first?.close(), second?.close()]);
});

/** Counts the API-key lookups an app makes in the store (its repository's lookup, the calls passed through). */
function countKeyLookups(a: TestApp): { readonly n: number } {
  const repo = a.deps.repos.workspaces;
  const lookup = repo.liveKeyByHash.bind(repo);
  const counter = { n: 0 };
  repo.liveKeyByHash = (hash: string) => {
    counter.n++;
    return lookup(hash);
  };
  return counter;
}

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Runs the API entry point with `env` and returns its exit code and stderr (it must exit by itself). */
function runApi(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const merged: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'silent', PORT: '0', ...env };
    for (const [k, v] of Object.entries(env)) if (v === '') delete merged[k]; // '' = unset
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
      cwd: root,
      env: merged,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('API keys: one role model for keys and sessions', () => {
  it("a member's JWT cannot revoke the admin's key; a member lists and revokes only their own", async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const memberSub = randomUUID();
    const member = await ws.jwt([], memberSub);
    const adminKey = (await app.post<{ id: string; key: string }>('/v1/api-keys', admin, { name: 'admin key' })).body;
    const own = (await app.post<{ id: string; key: string; roles: string[] }>('/v1/api-keys', member, { name: 'mine' }))
      .body;
    expect(own.roles).toEqual(['member']);
    const revoke = await app.del(`/v1/api-keys/${adminKey.id}`, member);
    expect(revoke.status).toBe(403);
    expect(revoke.body).toMatchObject({ code: 'FORBIDDEN' });
    expect((await app.get('/v1/config/models', adminKey.key)).status).toBe(200);
    const listed = (await app.get<{ api_keys: { id: string }[] }>('/v1/api-keys', member)).body.api_keys.map(
      (k) => k.id,
    );
    expect(listed).toEqual([own.id]);
    expect((await app.del(`/v1/api-keys/${own.id}`, member)).status).toBe(200);
    expect((await app.get('/v1/config/models', own.key)).status).toBe(401);
    // An admin revokes anyone's key.
    const another = (
      await app.post<{ id: string; key: string }>('/v1/api-keys', await ws.jwt([], randomUUID()), { name: 'x' })
    ).body;
    expect((await app.del(`/v1/api-keys/${another.id}`, admin)).status).toBe(200);
    // A member cannot mint a key above their roles.
    expect((await app.post('/v1/api-keys', member, { name: 'escalate', roles: ['workspace_admin'] })).status).toBe(403);
  });

  it('a pathway viewer is refused edits and deletion through their own API key as through their JWT', async () => {
    const ws = await buildWorkspace(app);
    const sub = randomUUID();
    const jwt = await ws.jwt([], sub);
    const pathway = (await app.post<{ id: string }>('/v1/pathways', ws.key, { name: 'guarded' }, ws.brainHeaders)).body;
    expect(
      (
        await app.post(
          `/v1/pathways/${pathway.id}/participants`,
          ws.key,
          { user_id: sub, role: 'viewer' },
          ws.brainHeaders,
        )
      ).status,
    ).toBe(201);
    expect((await app.put(`/v1/pathways/${pathway.id}`, jwt, { description: 'x' })).status).toBe(403);
    const key = (await app.post<{ key: string }>('/v1/api-keys', jwt, { name: 'viewer key' })).body.key;
    expect((await app.get(`/v1/pathways/${pathway.id}`, key)).status).toBe(200);
    expect((await app.put(`/v1/pathways/${pathway.id}`, key, { description: 'x' })).status).toBe(403);
    expect((await app.del(`/v1/pathways/${pathway.id}`, key)).status).toBe(403);
    // A pathway the user creates with their key is theirs.
    const mine = (await app.post<{ id: string }>('/v1/pathways', key, { name: 'mine' }, ws.brainHeaders)).body;
    expect((await app.put(`/v1/pathways/${mine.id}`, key, { description: 'mine' })).status).toBe(200);
  });
});

describe('secrets never logged', () => {
  it('the intervention token, share tokens, API keys and JWTs do not appear in any log line', async () => {
    const ws = await buildWorkspace(app);
    const jwt = await ws.jwt(['workspace_admin']);
    const scope = await app.services.auth.authenticate(ws.key);
    const doc = await app.services.interventions.create(scope, {
      id: randomUUID(),
      jobId: randomUUID(),
      traceId: null,
      pathwayId: null,
      brainId: ws.brainId,
      nodeIndex: 0,
      kind: 'approval',
      title: 'ok?',
      prompt: '',
      options: ['approve', 'reject'],
    });
    const token = doc.deliveries[0].token;
    const shareToken = `shr_${randomUUID().replace(/-/g, '')}`;
    logLines.length = 0;
    expect((await app.get(`/v1/public/interventions/${token}`)).status).toBe(200);
    await app.post(`/v1/public/interventions/${token}/respond`, undefined, { action: 'approve' });
    await app.get(`/v1/public/receptors/${ws.workspaceId}/any?t=${shareToken}`);
    await app.post(`/v1/public/receptors/${ws.workspaceId}/any/execute`, undefined, {
      share_token: shareToken,
      message: 'hi',
    });
    await app.get(`/v1/public/jobs/${randomUUID()}/stream?t=${shareToken}`);
    await app.get('/v1/config/models', ws.key);
    await app.get('/v1/api-keys', jwt);
    await app.get('/v1/config/models', 'ctx_wrongwrongwrongwrongwrongwrong');
    const all = logLines.join('\n');
    expect(logLines.length).toBeGreaterThan(5);
    for (const secret of [token, shareToken, ws.key, jwt, 'ctx_wrongwrongwrongwrongwrongwrong'])
      expect(all).not.toContain(secret);
    expect(all).toContain('/v1/public/interventions/:token');
  });
});

describe('safe configuration', () => {
  it('in production the API refuses the development JWT secret and a short one, with one line saying what to set', async () => {
    const dev = await runApi({ NODE_ENV: 'production', JWT_SECRET: '' });
    expect(dev.code).not.toBe(0);
    expect(dev.stderr).toContain('JWT_SECRET');
    expect(dev.stderr).toContain('at least 32 bytes');
    const short = await runApi({ NODE_ENV: 'production', JWT_SECRET: 'only-twenty-bytes-xx' });
    expect(short.code).not.toBe(0);
    expect(short.stderr).toMatch(/JWT_SECRET is 20 bytes/);
    expect(short.stderr.trim().split('\n')).toHaveLength(1);
  }, 120_000);

  it('a bootstrap identity that cannot be reconciled exits with one clear line, never a stack trace; another workspace id boots fine', async () => {
    const ws = await buildWorkspace(app);
    const base = {
      MONGODB_DB: app.config.MONGODB_DB,
      REDIS_PREFIX: app.config.REDIS_PREFIX,
      JWT_SECRET: 'x'.repeat(40),
    };
    // A bootstrap key that is already a key of another workspace.
    const key = `ctx_${randomUUID().replace(/-/g, '')}`;
    await app.services.auth.bootstrapWith({ workspaceId: ws.workspaceId, apiKey: key });
    const res = await runApi({ ...base, BOOTSTRAP_WORKSPACE_ID: randomUUID(), BOOTSTRAP_API_KEY: key });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('BOOTSTRAP_API_KEY is already a key of workspace');
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    // Two bootstrap workspaces on one store: both get a unique slug (the first one `default`).
    const first = randomUUID();
    const second = randomUUID();
    await app.services.auth.bootstrapWith({ workspaceId: first });
    await app.services.auth.bootstrapWith({ workspaceId: second });
    const slugs = await Promise.all(
      [first, second].map(async (id) => (await app.services.workspaces.findWorkspace(id))!.slug),
    );
    expect(new Set(slugs).size).toBe(2);
  }, 120_000);

  it('an admin changes the workspace slug; a taken or UUID-shaped slug is refused', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const slug = `team-${randomUUID().slice(0, 8)}`;
    expect((await app.patch('/v1/workspace', ws.key, { slug })).body).toMatchObject({ slug, id: ws.workspaceId });
    expect((await app.patch('/v1/workspace', other.key, { slug })).status).toBe(409);
    expect((await app.patch('/v1/workspace', other.key, { slug: randomUUID() })).status).toBe(400);
    expect((await app.patch('/v1/workspace', await ws.jwt([]), { name: 'nope' })).status).toBe(403);
  });
});

describe('failed authentications slow further failures only', () => {
  it('a valid key, JWT or share link keeps working while its address fails 100 times, on an API process that never saw the key too; unknown keys get 429 without a store read', async () => {
    const ws = await buildWorkspace(first);
    const jwt = await ws.jwt(['workspace_admin']);
    const revoked = (await first.post<{ id: string; key: string }>('/v1/api-keys', jwt, { name: 'to revoke' })).body;
    expect((await first.get('/v1/config/models', ws.key)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      const bad = await (i % 2 ? second : first).get('/v1/config/models', `ctx_bad${i}`.padEnd(36, 'x'));
      statuses.push(bad.status);
      if (bad.status === 429) expect(Number(bad.headers.get('retry-after'))).toBeGreaterThan(0);
      if (i % 10 === 9) {
        expect((await first.get('/v1/config/models', ws.key)).status).toBe(200);
        expect((await first.get('/v1/config/models', jwt)).status).toBe(200);
        expect((await second.get('/v1/config/models', jwt)).status).toBe(200);
      }
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(new Set(statuses.slice(5))).toEqual(new Set([429]));

    // The second process has never seen the key: it recognises it as recently valid through
    // Redis (no store read for that), then reads the key once to learn its scope, and serves it
    // from its own cache after that.
    const lookups = countKeyLookups(second);
    expect((await second.get('/v1/config/models', ws.key)).status).toBe(200);
    expect(lookups.n).toBe(1);
    expect((await second.get('/v1/config/models', ws.key)).status).toBe(200);
    expect(lookups.n).toBe(1);
    // An unknown key from this address: 429 before any store read.
    const unknown = await second.get('/v1/config/models', newApiKeySecret());
    expect(unknown.status).toBe(429);
    expect(unknown.body).toMatchObject({ code: 'RATE_LIMIT' });
    expect(lookups.n).toBe(1);
    // A revoked key is forgotten at once: 429 without a read, as for any unknown key.
    expect((await first.del(`/v1/api-keys/${revoked.id}`, jwt)).status).toBe(200);
    expect((await second.get('/v1/config/models', revoked.key)).status).toBe(429);
    expect(lookups.n).toBe(1);
    // A valid key that no API process has verified (written to the store by other means) is
    // not known to be valid: from this address it waits for the window like any unknown key.
    const stray = newApiKeySecret();
    await first.deps.db.collection<ApiKeyDoc>('api_keys').insertOne({
      _id: randomUUID(),
      workspaceId: ws.workspaceId,
      name: 'stray',
      hash: hashApiKey(stray),
      prefix: stray.slice(0, 10),
      roles: ['member'],
      createdBy: null,
      createdAt: new Date(),
      lastUsedAt: null,
      revokedAt: null,
    });
    expect((await second.get('/v1/config/models', stray)).status).toBe(429);
    expect(lookups.n).toBe(1);
    // A JWT that does not verify is a failure like any other.
    expect((await second.get('/v1/config/models', `${jwt.slice(0, -4)}AAAA`)).status).toBe(429);
    expect((await second.get('/v1/config/models', jwt)).status).toBe(200);
    // Share links follow the same rule: a link recently seen valid works, a wrong one is a 429.
    const neuron = await first.post<{ id: string }>('/v1/neurons', ws.key, {
      name: 'shared',
      brain_id: ws.brainId,
      neuron_config: { model: 'local/echo' },
    });
    expect(neuron.status).toBe(201);
    const receptors = (
      await first.get<{ receptors: { id: string; slug: string; executable_target: { id: string } }[] }>(
        '/v1/receptors?limit=200',
        ws.key,
        ws.brainHeaders,
      )
    ).body.receptors;
    const receptor = receptors.find((r) => r.executable_target.id === neuron.body.id)!;
    const share = await first.post<{ token: string }>(
      `/v1/receptors/${ws.workspaceId}/${receptor.slug}/share`,
      ws.key,
      {},
    );
    expect(share.status).toBe(201);
    expect((await second.get(`/v1/public/receptors/by-id/${receptor.id}?t=${share.body.token}`)).status).toBe(200);
    expect(
      (await second.get(`/v1/public/receptors/by-id/${receptor.id}?t=cxs_${randomUUID().replace(/-/g, '')}`)).status,
    ).toBe(429);
  });
});

describe('abuse limits that fit real clients', () => {
  it('failed authentication is limited per client address; behind a trusted proxy per forwarded address', async () => {
    for (let i = 0; i < 5; i++)
      expect((await limited.get('/v1/config/models', `ctx_bad${i}bad${i}bad${i}bad${i}bad${i}`)).status).toBe(401);
    const blocked = await limited.get('/v1/config/models', 'ctx_badbadbadbadbadbadbadbadbad');
    expect(blocked.status).toBe(429);
    expect(blocked.body).toMatchObject({ code: 'RATE_LIMIT' });
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // Behind a proxy, each forwarded client address has its own budget.
    for (let i = 0; i < 5; i++)
      expect(
        (
          await proxied.get('/v1/config/models', 'ctx_badbadbadbadbadbadbadbadbad', {
            'x-forwarded-for': '203.0.113.7',
          })
        ).status,
      ).toBe(401);
    expect(
      (await proxied.get('/v1/config/models', 'ctx_badbadbadbadbadbadbadbadbad', { 'x-forwarded-for': '203.0.113.7' }))
        .status,
    ).toBe(429);
    expect(
      (await proxied.get('/v1/config/models', 'ctx_badbadbadbadbadbadbadbadbad', { 'x-forwarded-for': '203.0.113.8' }))
        .status,
    ).toBe(401);
  });

  it('a four-way parallel client on one key stays under the default limit; every response carries the RateLimit headers', async () => {
    const ws = await buildWorkspace(app);
    const statuses = new Set<number>();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 150; i++) statuses.add((await app.get('/v1/config/models', ws.key)).status);
      }),
    );
    expect([...statuses]).toEqual([200]);
    const res = await app.get('/v1/config/models', ws.key);
    expect(Number(res.headers.get('ratelimit-limit'))).toBe(3000);
    expect(Number(res.headers.get('ratelimit-remaining'))).toBeLessThan(3000 - 600);
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(0);
  });
});

describe('the error body everywhere', () => {
  it('404, 405, 413, 415 and malformed JSON answer { message, code } JSON', async () => {
    const ws = await buildWorkspace(app);
    const unknown = await app.get('/v1/nope', ws.key);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'NOT_FOUND' });
    const wrong = await app.request('PATCH', '/v1/jobs', { auth: ws.key });
    expect(wrong.status).toBe(405);
    expect(wrong.body).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
    expect(wrong.headers.get('allow')).toContain('GET');
    const big = await app.request('POST', `/v1/traces/${randomUUID()}/messages`, {
      auth: ws.key,
      raw: JSON.stringify({ content: 'x'.repeat(6 * 1024 * 1024) }),
    });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const form = await app.request('POST', `/v1/traces/${randomUUID()}/messages`, {
      auth: ws.key,
      raw: 'content=hi',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    expect(form.body).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
    const broken = await app.request('POST', `/v1/traces/${randomUUID()}/messages`, {
      auth: ws.key,
      raw: '{"content": ',
    });
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    for (const r of [unknown, wrong, big, form, broken])
      expect(r.headers.get('content-type')).toContain('application/json');
  });
});
