/**
 * `npm run up`: the whole platform in the foreground on one machine (README.md, "`npm run up` starts"; docs/architecture.md).
 *
 * Why: a new user should get a working API, worker, snake demo and Temporal UI with one
 * command and no external servers. So this script
 *   1. starts embedded FerretDB / redis-server / Temporal dev server for each of MONGODB_URI,
 *      REDIS_URL (or REDIS_CLUSTER_NODES), TEMPORAL_ADDRESS that is unset (data in `<repo>/.data/`, so state survives
 *      restarts; the folder is git-ignored),
 *   2. fills BOOTSTRAP_API_KEY / BOOTSTRAP_WORKSPACE_ID / BOOTSTRAP_BRAIN_ID (and JWT_SECRET)
 *      when unset, persisting generated values in `.data/bootstrap.json` so a restart reuses
 *      them (the API makes that workspace, brain and admin key exist at start-up),
 *   3. runs `api/server.ts`, `worker/index.ts` and `snake/server.ts` with that environment,
 *      each output line prefixed by the process name,
 *   4. waits for GET /health, creates the snake's decision neuron, and prints a banner with
 *      the URLs, the API key, the workspace id and the brain id.
 * With CORTEX_SEARCH=weaviate it also starts a local Weaviate (REST 8079, gRPC 50051, data in
 * `.data/weaviate`) and points the API and worker at it; by default the index stays in process.
 * Ports are stable (API 8080, snake 8090, Temporal 7233, its UI 8233; PORT and SNAKE_PORT set
 * the first two): each moves to the next free port only when taken, and says so.
 * An application or embedded service that exits on its own is restarted after a backoff (1 s,
 * doubling to 30 s; logged, a service on its same ports and data); one that crashes 5 times in a
 * row, each within a minute of its start, stops everything with exit code 1 (a configuration
 * error should not loop forever): Restarting in embedded.ts.
 * Ctrl-C (SIGINT) or SIGTERM stops the applications first, then the services; so does the exit of
 * the process that started `up` (npm, whose script `exec`s this one so that signals reach it).
 * DATA_DIR (default `.data`) is the data folder, as for the API's blob store.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type EmbeddedServices, nextFreePort, Restarting, startEmbedded, SupervisedProcess } from './embedded.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DATA_DIR = path.resolve(ROOT, process.env.DATA_DIR ?? '.data');
const BOOTSTRAP_FILE = path.join(DATA_DIR, 'bootstrap.json');
const LOCK_FILE = path.join(DATA_DIR, 'up.pid');
/** How long the API may take to answer /health 200 (first start creates indexes). */
const HEALTH_TIMEOUT_MS = 120_000;
/** How long an application may take to exit after SIGTERM before it gets SIGKILL. */
const APP_STOP_GRACE_MS = 10_000;
/** How often `up` checks that the process that started it (npm, a shell) is still there. */
const PARENT_POLL_MS = 1_000;
/** The stable default ports; each moves to the next free one only when taken. */
const DEFAULT_PORTS = {
  api: 8080,
  snake: 8090,
  temporal: 7233,
  temporalUi: 8233,
  weaviate: 8079,
  weaviateGrpc: 50051,
} as const;

/** The generated-if-missing identity of a local installation; keys are env variable names. */
export interface Bootstrap {
  BOOTSTRAP_API_KEY: string;
  BOOTSTRAP_WORKSPACE_ID: string;
  BOOTSTRAP_BRAIN_ID: string;
  JWT_SECRET: string;
}

/** Generators for Bootstrap values; injectable so resolveBootstrap stays pure in tests. */
export const bootstrapGenerators: { [K in keyof Bootstrap]: () => string } = {
  // `ctx_` + 32 base64url characters (24 random bytes): recognisable in logs, 192 bits.
  BOOTSTRAP_API_KEY: () => `ctx_${randomBytes(24).toString('base64url')}`,
  BOOTSTRAP_WORKSPACE_ID: () => randomUUID(),
  BOOTSTRAP_BRAIN_ID: () => randomUUID(),
  JWT_SECRET: () => randomBytes(32).toString('base64url'),
};

/**
 * Decides each bootstrap value: the environment wins, then what an earlier run persisted,
 * then a fresh one. Returns the values and what to persist (earlier values plus new ones;
 * never values that came from the environment, which the user manages).
 */
export function resolveBootstrap(
  env: NodeJS.ProcessEnv,
  persisted: Partial<Bootstrap>,
  generate: { [K in keyof Bootstrap]: () => string } = bootstrapGenerators,
): { values: Bootstrap; persist: Partial<Bootstrap>; generated: (keyof Bootstrap)[] } {
  const values = {} as Bootstrap;
  const persist: Partial<Bootstrap> = { ...persisted };
  const generated: (keyof Bootstrap)[] = [];
  for (const key of Object.keys(generate) as (keyof Bootstrap)[]) {
    const fromEnv = env[key];
    if (fromEnv) values[key] = fromEnv;
    else if (persisted[key]) values[key] = persisted[key];
    else {
      values[key] = persist[key] = generate[key]();
      generated.push(key);
    }
  }
  return { values, persist, generated };
}

/**
 * The environment the API, worker and snake processes get: the caller's environment, with
 * service URLs from the embedded services where the caller had none, the bootstrap values,
 * and the snake's platform client settings (CORTEX_API_URL/KEY, CORTEX_BRAIN_ID) pointed at
 * the local API. Pure: no I/O, so it can be checked in isolation.
 */
export function assembleEnv(
  base: NodeJS.ProcessEnv,
  services: Omit<EmbeddedServices, 'stop'>,
  bootstrap: Bootstrap,
): NodeJS.ProcessEnv {
  const port = base.PORT ?? '8080';
  const env: NodeJS.ProcessEnv = { ...base, ...bootstrap };
  env.MONGODB_URI ??= services.mongoUri;
  env.REDIS_URL ??= services.redisUrl;
  env.TEMPORAL_ADDRESS ??= services.temporalAddress;
  env.TEMPORAL_UI_URL ??= services.temporalUiUrl;
  env.WEAVIATE_URL ??= services.weaviateUrl;
  env.WEAVIATE_GRPC_ADDRESS ??= services.weaviateGrpcAddress;
  env.CORTEX_API_URL ??= `http://127.0.0.1:${port}`;
  env.CORTEX_API_KEY ??= bootstrap.BOOTSTRAP_API_KEY;
  env.CORTEX_BRAIN_ID ??= bootstrap.BOOTSTRAP_BRAIN_ID;
  // Every snake tick runs the decision pathway (created by name after the API is up).
  env.SNAKE_PATHWAY ??= 'snake-decider';
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  return env;
}

/** The applications `npm run up` runs; `optional` ones are skipped while their file is missing. */
const APPS = [
  { name: 'api', script: 'api/server.ts', optional: false },
  { name: 'worker', script: 'worker/index.ts', optional: true },
  { name: 'snake', script: 'snake/server.ts', optional: true },
] as const;

const say = (line: string): void => console.log(`[up] ${line}`);
/** A path for messages: relative to the repository when inside it, else absolute. */
const shown = (file: string): string => (file.startsWith(`${ROOT}${path.sep}`) ? path.relative(ROOT, file) : file);

/** Refuses a second `npm run up` on the same .data folder (two FerretDBs on one SQLite dir). */
function takeLock(): void {
  if (existsSync(LOCK_FILE)) {
    const pid = Number(readFileSync(LOCK_FILE, 'utf8'));
    let alive = false;
    try {
      if (pid > 0) alive = (process.kill(pid, 0), true);
    } catch {
      alive = false;
    }
    if (alive) throw new Error(`another \`npm run up\` (pid ${pid}) uses ${DATA_DIR}; stop it first`);
  }
  writeFileSync(LOCK_FILE, String(process.pid));
  process.on('exit', () => rmSync(LOCK_FILE, { force: true }));
}

async function readPersisted(): Promise<Partial<Bootstrap>> {
  try {
    return JSON.parse(await readFile(BOOTSTRAP_FILE, 'utf8')) as Partial<Bootstrap>;
  } catch {
    return {};
  }
}

/** Polls GET /health until 200; rejects on timeout or as soon as `failed()` says the API died. */
async function waitForHealth(url: string, failed: () => boolean): Promise<void> {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (failed()) throw new Error('the API exited before it became healthy');
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      if (res.status === 200) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`${url} did not answer 200 within ${HEALTH_TIMEOUT_MS / 1000} s (last: ${last})`);
}

/**
 * Creates the snake's decision pathway (and its neuron when a model is configured) through the API (snake/provision.ts). Best effort: the
 * platform works without it, so a failure is reported and `up` carries on.
 */
async function ensureSnakeNeuron(env: NodeJS.ProcessEnv): Promise<void> {
  if (!existsSync(path.join(ROOT, 'snake/provision.ts'))) return;
  try {
    const { ensureDecisionPathway } = await import('../snake/provision.js');
    const res = await ensureDecisionPathway({
      apiUrl: env.CORTEX_API_URL!,
      apiKey: env.CORTEX_API_KEY!,
      brainId: env.CORTEX_BRAIN_ID!,
      model: env.SNAKE_MODEL ?? env.DEFAULT_MODEL ?? 'local/echo',
    });
    say(
      `snake decision pathway "${res.name}" ${res.created ? 'created' : res.updated ? 'updated' : 'already present'}: ${res.uses === 'model' ? 'a neuron node asks the model' : 'offline rules (transform and if nodes); set SNAKE_MODEL or DEFAULT_MODEL to a provider model for a neuron node'}`,
    );
  } catch (err) {
    say(`warning: could not create the snake decision pathway: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function banner(env: NodeJS.ProcessEnv, snake: boolean, embedded: string[]): string {
  const api = `http://127.0.0.1:${env.PORT ?? '8080'}`;
  const rows: [string, string][] = [
    ['API', api],
    ['Console', `${api}/console (sign in with the API key below)`],
    ['Snake', snake ? `http://127.0.0.1:${env.SNAKE_PORT ?? '8090'}` : '(not started: snake/server.ts is missing)'],
    ['Temporal', env.TEMPORAL_ADDRESS ?? ''],
    ['Temporal UI', env.TEMPORAL_UI_URL ?? '(external Temporal: its own UI)'],
    ['API key', env.BOOTSTRAP_API_KEY!],
    ['Workspace id', env.BOOTSTRAP_WORKSPACE_ID!],
    ['Brain id', env.BOOTSTRAP_BRAIN_ID!],
    ['Data', embedded.length ? `${DATA_DIR} (embedded ${embedded.join(', ')})` : 'external services only'],
  ];
  const line = '─'.repeat(72);
  return [
    line,
    '  Cortex is up',
    ...rows.map(([k, v]) => `  ${k.padEnd(13)} ${v}`),
    '',
    `  Try:  curl -H "Authorization: Bearer ${env.BOOTSTRAP_API_KEY}" -H "X-Brain-Id: ${env.BOOTSTRAP_BRAIN_ID}" ${api}/health`,
    '  Ctrl-C stops everything.',
    line,
  ].join('\n');
}

/**
 * One application (API, worker or snake) kept running under the same rule as the embedded
 * services (Restarting in embedded.ts): restarted after a backoff when it exits on its own.
 */
function startApp(name: string, script: string, env: NodeJS.ProcessEnv, prefix: string): Restarting {
  // `node --import tsx` is `tsx <script>` in one process, so our signals reach the app itself.
  const launch = () =>
    new SupervisedProcess(name, process.execPath, ['--import', 'tsx', script], {
      cwd: ROOT,
      env,
      onLine: (line, stream) => (stream === 'stderr' ? process.stderr : process.stdout).write(`${prefix}${line}\n`),
    });
  return new Restarting(name, launch, {
    log: say,
    onGiveUp: (why) => void shutdown(1, why),
    onStart: (proc) => say(`${name} started (pid ${proc.child.pid ?? '?'})`),
    stopping: () => stopping !== undefined,
  });
}

/** What is running; module state so that shutdown() works from any point of start-up. */
let services: EmbeddedServices | undefined;
const apps: Restarting[] = [];
let stopping: Promise<never> | undefined;

/**
 * Stops the applications first (they hold connections to the services), then the services,
 * then exits with `code`. Idempotent: later calls return the same promise. Services still
 * starting when it runs get SIGTERM from embedded.ts's exit hook.
 */
function shutdown(code: number, why: string): Promise<never> {
  return (stopping ??= (async () => {
    say(`${why}: stopping`);
    await Promise.all(apps.map((p) => p.stop(APP_STOP_GRACE_MS)));
    await services?.stop();
    say('stopped');
    process.exit(code);
  })());
}

/**
 * The API's and the snake's ports: PORT and SNAKE_PORT (default 8080 and 8090), or the next free
 * port above when taken (said in one line). The two never get the same port.
 */
async function choosePorts(): Promise<{ api: number; snake: number }> {
  const wantApi = Number(process.env.PORT ?? DEFAULT_PORTS.api);
  const wantSnake = Number(process.env.SNAKE_PORT ?? DEFAULT_PORTS.snake);
  const api = await nextFreePort(wantApi);
  const snake = await nextFreePort(wantSnake, new Set([api]));
  if (api !== wantApi) say(`port ${wantApi} is taken: the API listens on ${api}`);
  if (snake !== wantSnake) say(`port ${wantSnake} is taken: the snake listens on ${snake}`);
  return { api, snake };
}

const STORE_FILE = path.join(DATA_DIR, 'store.json');
const LOCAL_PG_URL = 'postgres://postgres@127.0.0.1:5432/cortex';

/**
 * Picks the embedded FerretDB's backend once per data folder and remembers it in
 * .data/store.json: SQLite in .data/mongo by default. FerretDB's SQLite backend (patch levels
 * cortex.3 and .4, scripts/provision.sh) answers key lookups, filtered lists, keyset pages and sorted
 * first pages from the collection's indexes; its PostgreSQL backend answers every filter, `_id`
 * included, with a sequential scan (docs/decisions.md, "Storage"). CORTEX_FERRETDB_POSTGRESQL=1
 * picks the local PostgreSQL (database `cortex`, created if missing) for a new data folder,
 * FERRETDB_POSTGRESQL_URL names a PostgreSQL database explicitly; a folder that already chose
 * keeps its choice.
 */
async function chooseFerretStore(): Promise<void> {
  if (process.env.FERRETDB_POSTGRESQL_URL) return;
  let store: { handler: 'postgresql' | 'sqlite'; url?: string } | undefined;
  if (existsSync(STORE_FILE)) store = JSON.parse(readFileSync(STORE_FILE, 'utf8')) as typeof store;
  else if (existsSync(path.join(DATA_DIR, 'mongo')))
    store = { handler: 'sqlite' }; // an earlier run's data stays where it is
  else if (process.env.CORTEX_FERRETDB_POSTGRESQL !== '1') store = { handler: 'sqlite' };
  else {
    const psql = (sql: string, db = 'postgres') =>
      new Promise<string>((resolve, reject) => {
        execFile(
          'psql',
          ['-h', '127.0.0.1', '-U', 'postgres', '-d', db, '-tAc', sql],
          { timeout: 5_000 },
          (err, out) => (err ? reject(err) : resolve(out.trim())),
        );
      });
    try {
      if ((await psql("SELECT 1 FROM pg_database WHERE datname = 'cortex'")) !== '1')
        await psql('CREATE DATABASE cortex');
      store = { handler: 'postgresql', url: LOCAL_PG_URL };
    } catch {
      say('CORTEX_FERRETDB_POSTGRESQL=1 but no local PostgreSQL answered on 127.0.0.1:5432: using SQLite');
      store = { handler: 'sqlite' };
    }
  }
  if (!existsSync(STORE_FILE)) writeFileSync(STORE_FILE, `${JSON.stringify(store)}\n`);
  if (store?.handler === 'postgresql' && store.url) {
    process.env.FERRETDB_POSTGRESQL_URL = store.url;
    say(
      `FerretDB stores data in the local PostgreSQL (${store.url}; its queries scan, see docs/decisions.md "Storage")`,
    );
  } else {
    say(`FerretDB stores data in SQLite under ${shown(path.join(DATA_DIR, 'mongo'))}`);
  }
}

async function main(): Promise<void> {
  await mkdir(DATA_DIR, { recursive: true });
  takeLock();

  let signals = 0;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      // A terminal Ctrl-C can reach us more than once (npm, tsx); the third one forces an exit
      // (pdeathsig and the exit hook in embedded.ts still stop the children).
      if (++signals >= 3) {
        say('forced exit');
        process.exit(1);
      }
      void shutdown(0, sig);
    });
  }
  // npm exits on SIGTERM without waiting for its script, and a closed terminal or a SIGKILLed
  // npm sends nothing at all: when the process that started `up` is gone (we were re-parented),
  // `up` stops everything as on SIGTERM.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void shutdown(0, `the process that started up (pid ${parent}) exited`);
  }, PARENT_POLL_MS).unref();

  const need = {
    mongo: !process.env.MONGODB_URI,
    // A Redis Cluster (REDIS_CLUSTER_NODES) is used as is, like a REDIS_URL.
    redis: !process.env.REDIS_URL && !process.env.REDIS_CLUSTER_NODES,
    temporal: !process.env.TEMPORAL_ADDRESS,
    // The search index stays in process unless CORTEX_SEARCH=weaviate asks for a local Weaviate (docs/search.md).
    weaviate: process.env.CORTEX_SEARCH === 'weaviate' && !process.env.WEAVIATE_URL,
  };
  if (need.mongo) await chooseFerretStore();
  const embedded = Object.entries(need)
    .filter(([, n]) => n)
    .map(([k]) => k);
  if (embedded.length) {
    say(`starting embedded ${embedded.join(', ')} (data in ${DATA_DIR})`);
    services = await startEmbedded({
      dataDir: DATA_DIR,
      need,
      temporalUi: true,
      log: (l) => say(l),
      restart: { onGiveUp: (why) => void shutdown(1, why) },
      preferredPorts: {
        temporal: DEFAULT_PORTS.temporal,
        temporalUi: DEFAULT_PORTS.temporalUi,
        weaviate: DEFAULT_PORTS.weaviate,
        weaviateGrpc: DEFAULT_PORTS.weaviateGrpc,
      },
    });
  }
  if (stopping) return;
  if (services?.temporalAddress && !services.temporalAddress.endsWith(`:${DEFAULT_PORTS.temporal}`))
    say(`port ${DEFAULT_PORTS.temporal} is taken: Temporal listens on ${services.temporalAddress}`);
  if (services?.temporalUiUrl && !services.temporalUiUrl.endsWith(`:${DEFAULT_PORTS.temporalUi}`))
    say(`port ${DEFAULT_PORTS.temporalUi} is taken: the Temporal UI is on ${services.temporalUiUrl}`);
  const ports = await choosePorts();

  const { values, persist, generated } = resolveBootstrap(process.env, await readPersisted());
  if (generated.length) {
    await writeFile(BOOTSTRAP_FILE, `${JSON.stringify(persist, null, 2)}\n`, { mode: 0o600 });
    say(`generated ${generated.join(', ')} (saved in ${shown(BOOTSTRAP_FILE)})`);
  }
  const env = assembleEnv(
    { ...process.env, PORT: String(ports.api), SNAKE_PORT: String(ports.snake) },
    services ?? {},
    values,
  );

  const width = Math.max(...APPS.map((a) => a.name.length));
  for (const app of APPS) {
    if (!existsSync(path.join(ROOT, app.script))) {
      if (!app.optional) throw new Error(`${app.script} is missing`);
      say(`warning: ${app.script} does not exist yet; ${app.name} not started`);
      continue;
    }
    apps.push(startApp(app.name, app.script, env, `${app.name.padEnd(width)} │ `));
  }

  const api = apps.find((p) => p.name === 'api')!;
  await waitForHealth(`http://127.0.0.1:${env.PORT ?? '8080'}/health`, () => api.gaveUp);
  if (stopping) return;
  await ensureSnakeNeuron(env);
  console.log(
    banner(
      env,
      apps.some((p) => p.name === 'snake'),
      embedded,
    ),
  );
}

main().catch((err: unknown) => {
  console.error(`[up] ${err instanceof Error ? err.message : String(err)}`);
  void shutdown(1, 'start-up failed');
});
