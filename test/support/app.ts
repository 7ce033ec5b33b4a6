import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, inject } from 'vitest';
import { createApp } from '../../api/app.js';
import { loadConfig, type Config } from '../../src/kernel/config.js';
import { closeDeps, createDeps, type Deps } from '../../src/compose/deps.js';
import { createLogger } from '../../src/kernel/logger.js';
import { upgradeStore } from '../../src/releases/index.js';
import { createServices, type Services } from '../../src/compose/services.js';

export interface TestResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}
type Body = unknown;

/** A client bound to a running test app; `auth` is a bearer token (API key or JWT). */
export interface TestClient {
  url: string;
  request<T = Record<string, unknown>>(
    method: string,
    path: string,
    opts?: { auth?: string; body?: Body; headers?: Record<string, string>; raw?: string },
  ): Promise<TestResponse<T>>;
  get<T = Record<string, unknown>>(
    path: string,
    auth?: string,
    headers?: Record<string, string>,
  ): Promise<TestResponse<T>>;
  post<T = Record<string, unknown>>(
    path: string,
    auth?: string,
    body?: Body,
    headers?: Record<string, string>,
  ): Promise<TestResponse<T>>;
  put<T = Record<string, unknown>>(
    path: string,
    auth?: string,
    body?: Body,
    headers?: Record<string, string>,
  ): Promise<TestResponse<T>>;
  patch<T = Record<string, unknown>>(
    path: string,
    auth?: string,
    body?: Body,
    headers?: Record<string, string>,
  ): Promise<TestResponse<T>>;
  del<T = Record<string, unknown>>(
    path: string,
    auth?: string,
    headers?: Record<string, string>,
  ): Promise<TestResponse<T>>;
}

export interface TestApp extends TestClient {
  deps: Deps;
  services: Services;
  config: Config;
}

/** Test config: the embedded services from global-setup, a fresh Redis prefix and task queue per file. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const tag = randomUUID().slice(0, 8);
  return loadConfig(process.env, {
    NODE_ENV: 'test',
    LOG_LEVEL: (process.env.TEST_LOG_LEVEL as Config['LOG_LEVEL'] | undefined) ?? 'silent',
    // A database per test app: isolation, and FerretDB's SQLite backend stays fast on small databases.
    MONGODB_DB: process.env.MONGODB_DB ?? `cortex_t${tag}`,
    // Blob bodies of this app in a folder of its own (never the repository's .data).
    DATA_DIR: path.join(os.tmpdir(), `cortex-t${tag}`),
    REDIS_PREFIX: `t${tag}:`,
    // The search-weaviate project: the index in the Weaviate global setup started (vitest.config.ts).
    // Its first build creates the app's collection (a Raft round per schema change): a first search
    // may wait for it longer than the 2 s default (search-feed.test.ts tests the 503 itself).
    ...(process.env.CORTEX_SEARCH === 'weaviate' && inject('weaviateUrl')
      ? {
          WEAVIATE_URL: inject('weaviateUrl'),
          WEAVIATE_GRPC_ADDRESS: inject('weaviateGrpcAddress'),
          SEARCH_BUILD_WAIT_MS: 30_000,
        }
      : {}),
    TEMPORAL_TASK_QUEUE: `tq-${tag}`,
    JWT_SECRET: 'test-secret-0123456789abcdef',
    // The suite runs two files at once beside Temporal and FerretDB on a 2-core machine: generous
    // deadlines and breakers so that a slow moment is not a 503. test/api/faults.test.ts sets the
    // production defaults (or tighter) where the bounds are what it tests.
    REQUEST_DEADLINE_MS: 30_000,
    BREAKER_PROBE_TIMEOUT_MS: 10_000,
    // The workers of the `cluster` project (vitest.config.ts) run on the suite's Redis Cluster.
    ...(process.env.CORTEX_TEST_REDIS === 'cluster'
      ? { REDIS_CLUSTER_NODES: process.env.CORTEX_TEST_REDIS_CLUSTER_NODES }
      : {}),
    ...overrides,
  });
}

export function makeClient(url: string): TestClient {
  const request: TestClient['request'] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.auth) headers.authorization = `Bearer ${opts.auth}`;
    let payload: string | undefined = opts.raw;
    if (opts.body !== undefined && payload === undefined) {
      payload = JSON.stringify(opts.body);
    }
    if (payload !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(url + path, { method, headers, body: payload });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: body as never, headers: res.headers, text };
  };
  return {
    url,
    request,
    get: (p, auth, headers) => request('GET', p, { auth, headers }),
    post: (p, auth, body, headers) => request('POST', p, { auth, body, headers }),
    put: (p, auth, body, headers) => request('PUT', p, { auth, body, headers }),
    patch: (p, auth, body, headers) => request('PATCH', p, { auth, body, headers }),
    del: (p, auth, headers) => request('DELETE', p, { auth, headers }),
  };
}

/** Starts the real app (real FerretDB/Redis/Temporal) on port 0 for one test file. */
export async function startTestApp(
  overrides: Partial<Config> = {},
  opts: { logLines?: string[] } = {},
): Promise<TestApp & { close(): Promise<void> }> {
  const config = testConfig(opts.logLines ? { LOG_LEVEL: 'debug', ...overrides } : overrides);
  // logLines: every log line the app writes is captured there (tests that check what is logged).
  const log = createLogger(
    config.LOG_LEVEL,
    {},
    opts.logLines ? { write: (line: string) => void opts.logLines!.push(line) } : undefined,
  );
  const deps = await createDeps(config, log);
  const services = createServices(deps);
  await upgradeStore(deps, services);
  const server: Server = createServer(createApp(deps, services).callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    ...makeClient(url),
    deps,
    services,
    config,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await closeDeps(deps);
    },
  };
}

/**
 * vitest fixture: one app per file, torn down after. Tests isolate themselves by creating
 * their own workspace with buildWorkspace (no truncation between tests).
 */
export function useTestApp(overrides: Partial<Config> = {}): TestApp {
  const holder = {} as TestApp & { close?: () => Promise<void> };
  beforeAll(async () => {
    Object.assign(holder, await startTestApp(overrides));
  });
  afterAll(async () => {
    await holder.close?.();
  });
  return new Proxy(holder, { get: (t, k) => (t as unknown as Record<string | symbol, unknown>)[k] }) as TestApp;
}

/** A fresh workspace with a brain and an admin API key (the tests' factory for one). */
export async function buildWorkspace(
  app: TestApp,
  opts: { roles?: ('workspace_admin' | 'core_admin' | 'member')[] } = {},
) {
  const ws = await app.services.auth.provisionWorkspace({ roles: opts.roles });
  const brainHeaders = { 'x-brain-id': ws.brainId };
  const jwt = (roles: string[] = ['workspace_admin'], sub: string = randomUUID()) =>
    app.services.auth.signJwt({ sub, workspace_id: ws.workspaceId, roles });
  return { ...ws, brainHeaders, jwt };
}
