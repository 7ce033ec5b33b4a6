import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes/index.js';
import type { RouteDef } from '../../api/route.js';
import { buildWorkspace, startTestApp, useTestApp, type TestApp, type TestResponse } from '../support/app.js';
import { startTestWorker } from '../support/worker.js';
import { MISSING, useRouteWorld, type RouteWorld } from '../support/route-world.js';

/**
 * Threat class: request text that reaches an object's prototype (docs/security.md, "No lookup by
 * request text"). The attacker is the strongest tenant, a workspace admin (a JWT), who names a
 * member of `Object.prototype` where the server looks something up by name: the catalog route once
 * answered `GET /v1/resources/constructor/<uuid>` with the handler's input — the services and their
 * configuration, JWT_SECRET included — and `__proto__`, `valueOf`, `hasOwnProperty` with a 500.
 *
 * Generated from the mounted route table (`allRoutes()`), with the fixture world of the
 * authorization suite (test/support/route-world.ts) filling every other parameter, query and body
 * with real resources of the workspace, so each name reaches the handler's lookup. For EVERY route:
 *   - each name in EVERY path parameter → a 4xx that carries no server data;
 *   - each name in EVERY query parameter the route's zod query schema declares → answered as a word
 *     the server has never seen: a 4xx wherever that word is refused; where any text is valid (a
 *     search, a path prefix, a filter: searching for the word "prototype" is a search) a 2xx of
 *     the same shape; never a 5xx, never server data;
 *   - each name as a JSON body key inside every free-form object of the route's body and as the
 *     value of every string field of it → never 5xx, never server data.
 * A route added later joins by being mounted; one whose query schema this file cannot read fails.
 *
 * A pathway is the other place a tenant names things the server looks up: its node ids key the
 * run's values, and its expressions and `{{ }}` templates read them. The last block runs one on a
 * worker: node ids that are prototype names stay plain keys, and no expression or template reaches
 * a prototype member or a function.
 */
const NAMES = ['constructor', '__proto__', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'] as const;

const BOOTSTRAP_API_KEY = `cortex-bootstrap-${randomUUID()}`;
const INTERNAL_SIGNING_SECRET = `internal-signing-${randomUUID()}`;
const app = useTestApp({
  BOOTSTRAP_API_KEY,
  INTERNAL_SIGNING_SECRET,
  // Hundreds of requests of one credential and one share link within a minute: the limits are not what this file tests.
  RATE_LIMIT_POINTS: 1_000_000,
  SHARE_REQUESTS_PER_MINUTE: 1_000_000,
  AUTH_FAILURES_PER_MINUTE: 1_000_000,
  // Every run-starting route is sent many bodies and no worker ends them: the run share is not tested here either.
  WORKSPACE_MAX_ACTIVE_RUNS: 1_000_000,
});
const world = useRouteWorld(app);
let w: RouteWorld;
let admin: string;
beforeAll(async () => {
  w = world.w;
  admin = await w.a.jwt(['workspace_admin']);
});

/**
 * Routes whose valid request waits for a run to take it (an intervention's answer, a chat
 * completion): this file runs no worker, so only the body forms that change the request's
 * meaning are sent to them (each such request would otherwise wait for the request deadline).
 */
const WAITS_FOR_A_RUN = new Set(['POST /v1/interventions/:id/respond', 'POST /v1/openai/chat/completions']);

/** The keys a zod schema of an object declares (through pipes, refinements, optional and default wrappers). */
function keysOf(schema: unknown): string[] | undefined {
  const def = (schema as { _zod?: { def: Record<string, unknown> } } | undefined)?._zod?.def;
  if (!def) return undefined;
  if (def.type === 'object') return Object.keys(def.shape as Record<string, unknown>);
  if (def.type === 'pipe') return keysOf(def.in);
  if (def.type === 'intersection') return [...(keysOf(def.left) ?? []), ...(keysOf(def.right) ?? [])];
  if (def.type === 'union') return [...new Set((def.options as unknown[]).flatMap((o) => keysOf(o) ?? []))];
  if (def.innerType) return keysOf(def.innerType);
  return undefined;
}

const paramsOf = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]);
const label = (def: RouteDef) => `${def.method.toUpperCase()} ${def.path}`;

/** The route's own query (required parameters), a share link's token where the route takes only one. */
function baseQuery(def: RouteDef): URLSearchParams {
  const q = new URLSearchParams(world.queryFor(def).replace(/^\?/, ''));
  if (def.share === 'only') q.set('t', w.ids.shareA);
  return q;
}

async function send(def: RouteDef, path: string, query: URLSearchParams, body: unknown): Promise<TestResponse> {
  const qs = query.toString();
  const url = `${path}${qs ? `?${qs}` : ''}`;
  if (def.kind === 'stream') return openStream(url);
  return app.request(def.method.toUpperCase(), url, {
    auth: admin,
    headers: w.a.brainHeaders,
    ...(body === undefined || body === MISSING ? {} : { raw: JSON.stringify(body) }),
  });
}

/** An SSE route: its status, and what it sends first (within half a second) when it opens; then the stream is closed. */
async function openStream(url: string): Promise<TestResponse> {
  const ac = new AbortController();
  const res = await fetch(`${app.url}${url}`, {
    headers: { authorization: `Bearer ${admin}`, ...w.a.brainHeaders },
    signal: ac.signal,
  });
  let text = '';
  if (res.status >= 300) text = await res.text();
  else {
    const first = await Promise.race([
      res.body!.getReader().read(),
      new Promise<null>((r) => setTimeout(() => r(null), 500)),
    ]);
    if (first?.value) text = Buffer.from(first.value).toString('utf8');
    ac.abort();
  }
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* an event stream */
  }
  return { status: res.status, body: parsed as never, headers: res.headers, text };
}

/** The server's own configuration and objects never appear in an answer. */
function expectNoServerData(res: TestResponse, what: string) {
  for (const secret of [
    app.config.JWT_SECRET,
    BOOTSTRAP_API_KEY,
    INTERNAL_SIGNING_SECRET,
    app.config.MONGODB_URI,
    app.config.REDIS_URL,
  ].filter((s): s is string => typeof s === 'string' && s.length > 0))
    expect(res.text, `${what}: the answer carries server configuration`).not.toContain(secret);
  const leaked: string[] = [];
  const walk = (v: unknown, depth: number) => {
    if (depth > 6 || typeof v !== 'object' || v === null) return;
    for (const [k, x] of Object.entries(v)) {
      // The handler's input (what the catalog once returned) holds these; no answer of the API does.
      if (['services', 'deps', 'ctx'].includes(k)) leaked.push(k);
      walk(x, depth + 1);
    }
  };
  walk(res.body, 0);
  expect(leaked, `${what}: the answer carries server objects`).toEqual([]);
}

function expect4xx(res: TestResponse, what: string) {
  expect(res.status, `${what} → ${res.status} ${res.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(res.status, `${what} → ${res.status} ${res.text.slice(0, 300)}`).toBeLessThan(500);
  // A 429 would mean the request was never looked at.
  expect(res.status, `${what}: rate limited, not checked`).not.toBe(429);
}

function expectNo5xx(res: TestResponse, what: string) {
  expect(res.status, `${what} → ${res.status} ${res.text.slice(0, 300)}`).toBeLessThan(500);
  expect(res.status, `${what}: rate limited, not checked`).not.toBe(429);
}

const routes = allRoutes();

describe('prototype member names in every path parameter, query parameter and body of every route', () => {
  it('every route with a query schema declares readable keys', () => {
    expect(routes.filter((r) => r.query && !keysOf(r.query)).map(label)).toEqual([]);
  });

  const withParams = routes.filter((r) => paramsOf(r.path).length > 0);
  it.each(withParams.map((r) => [label(r), r] as const))(
    '%s: a prototype name in a path parameter → 4xx, no server data',
    async (_, def) => {
      for (const param of paramsOf(def.path)) {
        for (const name of NAMES) {
          const path = world.fill(def.path.replace(`:${param}`, name));
          expect(path, `no fixture for ${label(def)}`).toBeDefined();
          const what = `${label(def)} with :${param}=${name}`;
          const res = await send(def, path!, baseQuery(def), world.bodyFor(def));
          expect4xx(res, what);
          expectNoServerData(res, what);
        }
      }
    },
  );

  const withQuery = routes.filter((r) => (keysOf(r.query) ?? []).length > 0);
  it.each(withQuery.map((r) => [label(r), r] as const))(
    '%s: a prototype name in a query parameter is answered as any unknown word (a 4xx where one is), no server data',
    async (_, def) => {
      const path = world.fill(def.path);
      expect(path, `no fixture for ${label(def)}`).toBeDefined();
      for (const key of keysOf(def.query)!) {
        const at = (value: string) => {
          const query = baseQuery(def);
          query.set(key, value);
          return send(def, path!, query, world.bodyFor(def));
        };
        // A word the server has never seen: where it is refused the names are too; where any text is
        // valid (a search, a path prefix) the names are ordinary words of the same answer's shape.
        const unknown = await at(`zq${randomUUID().slice(0, 8)}`);
        expectNo5xx(unknown, `${label(def)} with ?${key}=<an unknown word>`);
        for (const name of NAMES) {
          const what = `${label(def)} with ?${key}=${name}`;
          const res = await at(name);
          if (unknown.status >= 400) expect4xx(res, what);
          else {
            expectNo5xx(res, what);
            if (res.status < 300 && typeof res.body === 'object' && res.body !== null)
              expect(Object.keys(res.body), what).toEqual(Object.keys(unknown.body as object));
          }
          expectNoServerData(res, what);
        }
      }
    },
  );

  // Share-link routes first: a later body test rotates the world's share link (its token then answers 401).
  const withBody = routes.filter((r) => r.body).sort((x, y) => Number(y.share === 'only') - Number(x.share === 'only'));
  it.each(withBody.map((r) => [label(r), r] as const))(
    '%s: prototype names as body keys and values → no 5xx, no server data',
    async (_, def) => {
      const path = world.fill(def.path);
      const valid = world.bodyFor(def);
      expect(path, `no fixture for ${label(def)}`).toBeDefined();
      expect(valid, `no body fixture for ${label(def)}`).not.toBe(MISSING);
      const isObject = (v: unknown): v is Record<string, unknown> =>
        typeof v === 'object' && v !== null && !Array.isArray(v);
      for (const name of NAMES) {
        // Every free-form object of the body (metadata, config, input…) holds the name as a key; a
        // computed key makes `__proto__` an own key that JSON carries like any other.
        const withKeys = (v: unknown): unknown =>
          isObject(v)
            ? { ...Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withKeys(x)])), [name]: { [name]: name } }
            : v;
        const keyed = isObject(valid)
          ? Object.fromEntries(Object.entries(valid).map(([k, x]) => [k, withKeys(x)]))
          : valid;
        // Every string field names the member instead (a kind, a handler, an action, a name…).
        const named = isObject(valid)
          ? Object.fromEntries(Object.entries(valid).map(([k, x]) => [k, typeof x === 'string' ? name : x]))
          : valid;
        // The whole body is the free-form object: the name at its top level.
        const top = isObject(valid) ? { ...valid, [name]: name } : { [name]: name };
        const forms = [
          ['as keys of its objects', keyed],
          ['as its string values', named],
          ['as a top-level key', top],
        ] as const;
        for (const [form, body] of WAITS_FOR_A_RUN.has(label(def)) ? forms.slice(1, 2) : forms) {
          const what = `${label(def)} with ${name} ${form}`;
          const res = await send(def, path!, baseQuery(def), body);
          expectNo5xx(res, what);
          expectNoServerData(res, what);
        }
      }
    },
  );
});

describe("a pathway's node ids, expressions and templates", () => {
  let platform: (TestApp & { close(): Promise<void> }) | undefined;
  let worker: Awaited<ReturnType<typeof startTestWorker>> | undefined;
  beforeAll(async () => {
    // An app and worker of their own (a fresh store and task queue): the route world's queued jobs stay unrun.
    platform = await startTestApp();
    worker = await startTestWorker(platform);
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await platform?.close();
  });

  it('node ids named after prototype members are plain keys; no expression or template reads a prototype member', async () => {
    const p = platform!;
    const ws = await buildWorkspace(p);
    // Every form that could reach Object.prototype or a function, read from the input, the current value and the nodes.
    const probes = NAMES.flatMap((n) => [`input.\`${n}\``, `last.\`${n}\``, `$lookup(input, "${n}")`, `$.\`${n}\``]);
    const reads = `{ ${probes.map((e, i) => `"p${i}": $type(${e})`).join(', ')}, "proto": nodes.\`__proto__\`.mark, "ctor": nodes.\`constructor\`.mark }`;
    const nodes = [
      { id: 's', type: 'start' },
      { id: '__proto__', type: 'transform', data: { expression: '{ "mark": "proto-node" }' } },
      { id: 'constructor', type: 'transform', data: { expression: '{ "mark": "constructor-node" }' } },
      { id: 'reads', type: 'transform', data: { expression: reads } },
      {
        id: 'toString',
        type: 'transform',
        data: {
          template: `[{{ input.constructor }}|{{ input.__proto__ }}|{{ $string(input.toString) }}|{{ nodes.\`__proto__\`.mark }}]`,
        },
      },
      { id: 'o', type: 'output', data: { value: '{ "reads": nodes.reads, "text": last }' } },
    ];
    const edges = [
      { source: 's', target: '__proto__' },
      { source: '__proto__', target: 'constructor' },
      { source: 'constructor', target: 'reads' },
      { source: 'reads', target: 'toString' },
      { source: 'toString', target: 'o' },
    ];
    const created = await p.post<{ id: string }>(
      '/v1/pathways',
      ws.key,
      { name: `proto-${randomUUID().slice(0, 6)}`, pathway_graph: { nodes, edges } },
      ws.brainHeaders,
    );
    expect(created.status, created.text).toBe(201);
    const started = await p.post(
      `/v1/pathways/${created.body.id}/execute`,
      ws.key,
      { input: { a: 1 } },
      ws.brainHeaders,
    );
    expect(started.status, started.text).toBe(202);
    const jobId = String(started.body.job_id);
    let job: { status: string; result?: { output: unknown; nodes: Record<string, unknown> } } = { status: 'pending' };
    for (const t0 = Date.now(); !['completed', 'failed'].includes(job.status) && Date.now() - t0 < 30_000;) {
      await new Promise((r) => setTimeout(r, 200));
      job = (await p.get<typeof job>(`/v1/jobs/${jobId}/status`, ws.key)).body;
    }
    expect(job.status, JSON.stringify(job)).toBe('completed');
    // No probe found anything (each $type(...) of nothing leaves its key out); the nodes are read by their ids.
    expect(job.result!.output).toEqual({
      reads: { proto: 'proto-node', ctor: 'constructor-node' },
      text: '[|||proto-node]',
    });
    // The run's values keep a node named __proto__ as an own key (it never became the object's prototype).
    expect(Object.hasOwn(job.result!.nodes, '__proto__')).toBe(true);
    expect(job.result!.nodes.__proto__).toEqual({ mark: 'proto-node' });
    expect(job.result!.nodes.constructor).toEqual({ mark: 'constructor-node' });
    expectNoServerData({ status: 200, body: job as never, headers: new Headers(), text: JSON.stringify(job) }, 'run');
  });
});
