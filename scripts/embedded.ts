/**
 * Embedded services runner: starts FerretDB (MongoDB wire protocol), redis-server and the
 * Temporal dev server as child processes on free loopback ports.
 *
 * Why it exists: on a fresh machine of this project there is no MongoDB, Redis or Temporal
 * cluster (docs/architecture.md). `npm run up` (scripts/up.ts)
 * and the integration tests (test/support/global-setup.ts) both need real servers, so the
 * one piece of code that knows how to start, probe and stop them lives here. The binaries
 * come from scripts/provision.sh (cache folder `${CORTEX_CACHE:-~/.cache/cortex}/bin`).
 *
 * Process hygiene, because orphaned servers hold ports and data files:
 * - On Linux each child is started through `setpriv --pdeathsig TERM`, so the kernel sends
 *   it SIGTERM when this process dies for any reason (even SIGKILL). Those children also get
 *   their own process group (`detached`), so a terminal Ctrl-C reaches only the parent, which
 *   can then stop the applications before the services they depend on.
 * - Without setpriv the children stay in our process group, so Ctrl-C reaches them directly.
 * - An `exit` hook sends SIGTERM to any child still running, and when nobody else handles
 *   SIGINT/SIGTERM/SIGHUP we stop the children gracefully and re-raise the signal.
 * - With the `restart` option (`npm run up`) a service that dies is started again on its ports
 *   and data by Restarting, the supervisor scripts/up.ts also runs its applications under.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import { SEARCH_ATTRIBUTES } from '../src/temporal/definitions.js';

/** What to start and where; see startEmbedded. */
export interface EmbeddedOptions {
  /** Root folder; each service gets its own subfolder (mongo/, redis/, temporal/). */
  dataDir: string;
  /** Which services to start; a service already provided by a URL variable is not needed. Weaviate only when asked (CORTEX_SEARCH=weaviate). */
  need: { mongo: boolean; redis: boolean; temporal: boolean; weaviate?: boolean };
  /** Serve the Temporal Web UI on its own free port (false: `--headless`). */
  temporalUi: boolean;
  /** One line per notable event (service started, stopping); the caller decides where it goes. */
  log: (line: string) => void;
  /** How long each service may take to become ready (default 90 s; CORTEX_EMBEDDED_TIMEOUT_MS). */
  readyTimeoutMs?: number;
  /**
   * Stable ports for `npm run up`: each is tried first and, when taken, the next free one above
   * it. Unset: any free port (the tests, which must never collide with a running `npm run up`).
   */
  preferredPorts?: { temporal?: number; temporalUi?: number; weaviate?: number; weaviateGrpc?: number };
  /**
   * Supervise the services (`npm run up`): one that exits unexpectedly is restarted like the
   * applications (Restarting), on the same ports with the same data, so clients reconnect.
   * Unset: a service that dies stays dead (the tests, which start fresh ones each run).
   */
  restart?: { onGiveUp: (why: string) => void };
}

/** Connection strings of the started services and the one way to stop them. */
export interface EmbeddedServices {
  /** `mongodb://127.0.0.1:<port>/` (FerretDB). */
  mongoUri?: string;
  /** `redis://127.0.0.1:<port>`. */
  redisUrl?: string;
  /** `127.0.0.1:<port>` (gRPC frontend of the Temporal dev server). */
  temporalAddress?: string;
  /** `http://127.0.0.1:<port>` when temporalUi was requested. */
  temporalUiUrl?: string;
  /** Weaviate's REST address `http://127.0.0.1:<port>` and its gRPC address `127.0.0.1:<port>`. */
  weaviateUrl?: string;
  weaviateGrpcAddress?: string;
  /** Process id of each started service by name (the bench reads a server's RSS). */
  pids?: Record<string, number>;
  /** SIGTERM to every child, SIGKILL after a grace period; safe to call more than once. */
  stop(): Promise<void>;
}

/** Root of the provisioning cache (shared with scripts/provision.sh). */
export const cacheDir = (): string => process.env.CORTEX_CACHE ?? path.join(os.homedir(), '.cache', 'cortex');

/** How many output lines of a child we keep for error messages. */
const TAIL_LINES = 40;
/** How long a child may take to exit after SIGTERM before it gets SIGKILL. */
const STOP_GRACE_MS = 8_000;
/** How often a failed start caused by a port race is retried with fresh ports. */
const PORT_RETRIES = 3;

/**
 * Picks `n` distinct free TCP ports on 127.0.0.1 by binding port 0 and releasing it.
 * All sockets are held until every port is known, so one call never returns a port twice.
 * Another process may still grab a port before our child binds it: startService retries.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const server = net.createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((s) => (s.address() as AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** True when nothing listens on 127.0.0.1:`port` (we could bind it just now). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * The first free port at or above `preferred` (at most `span` tried), skipping `skip`: the
 * stable-port rule of `npm run up` (API 8080, snake 8090, Temporal 7233, its UI 8233, each
 * moving up only when taken). Like freePorts, another process may take it before our child
 * binds it; startService retries.
 */
export async function nextFreePort(
  preferred: number,
  skip: ReadonlySet<number> = new Set(),
  span = 100,
): Promise<number> {
  for (let port = preferred; port < Math.min(preferred + span, 65536); port++) {
    if (!skip.has(port) && (await portIsFree(port))) return port;
  }
  throw new Error(`no free port in ${preferred}-${preferred + span - 1} on 127.0.0.1`);
}

/** Ports for one service: each preferred one (or the next free above it), else any free port. */
async function pickPorts(count: number, preferred: (number | undefined)[]): Promise<number[]> {
  const chosen: number[] = [];
  const random = await freePorts(count);
  for (let i = 0; i < count; i++) {
    const want = preferred[i];
    chosen.push(want ? await nextFreePort(want, new Set(chosen)) : random.find((p) => !chosen.includes(p))!);
  }
  return chosen;
}

/** Every child started through SupervisedProcess that has not exited yet (for the exit hook). */
const live = new Set<SupervisedProcess>();
const SETPRIV = '/usr/bin/setpriv';
const hasSetpriv = process.platform === 'linux' && isExecutable(SETPRIV);

function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds a program on PATH (redis-server is a system package, not in our cache). */
function onPath(name: string, fallback: string): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return fallback;
}

/** A provisioned binary, or an error that says how to get it. */
function cachedBinary(name: string): string {
  const file = path.join(cacheDir(), 'bin', name);
  if (!isExecutable(file)) throw new Error(`${name} not found at ${file}; run \`npm run provision\` first`);
  return file;
}

/** How a SupervisedProcess is started; see its constructor. */
export interface SupervisedOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Append the child's full output to this file (services keep theirs beside their data). */
  logFile?: string;
  /** Called for every complete output line (scripts/up.ts prints them with a name prefix). */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
}

/**
 * One spawned child: keeps its last output lines for error messages, optionally writes the
 * full output to a file, and knows how to stop itself. Exported because scripts/up.ts runs
 * the API, worker and snake processes under the same rules (parent-death signal, own process
 * group, SIGTERM then SIGKILL) as the services.
 */
export class SupervisedProcess {
  readonly child: ChildProcess;
  /** Resolves when the child has exited (or failed to spawn); never rejects. */
  readonly exited: Promise<void>;
  exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly tail: string[] = [];
  private readonly logFile: WriteStream | undefined;

  constructor(
    readonly name: string,
    readonly command: string,
    readonly args: string[],
    opts: SupervisedOptions,
  ) {
    this.logFile = opts.logFile ? createWriteStream(opts.logFile, { flags: 'a' }) : undefined;
    const [cmd, argv] = hasSetpriv ? [SETPRIV, ['--pdeathsig', 'TERM', '--', command, ...args]] : [command, args];
    this.child = spawn(cmd, argv, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: hasSetpriv,
    });
    live.add(this);
    for (const [streamName, stream] of [
      ['stdout', this.child.stdout],
      ['stderr', this.child.stderr],
    ] as const) {
      let partial = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        this.logFile?.write(chunk);
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          this.remember(line);
          opts.onLine?.(line, streamName);
        }
      });
      stream?.on('end', () => {
        if (partial) {
          this.remember(partial);
          opts.onLine?.(partial, streamName);
        }
      });
    }
    this.exited = new Promise<void>((resolve) => {
      const done = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.exitInfo) return;
        this.exitInfo = { code, signal };
        live.delete(this);
        this.logFile?.end();
        resolve();
      };
      // 'close' (not 'exit') so that the last output lines have been read when we report.
      this.child.once('close', done);
      this.child.once('error', (err) => {
        this.remember(`spawn error: ${err.message}`);
        done(null, null);
      });
    });
  }

  private remember(line: string): void {
    if (!line.trim()) return;
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
  }

  /** The last output lines, indented, for an error message. */
  tailText(): string {
    return this.tail.length ? this.tail.map((l) => `    ${l}`).join('\n') : '    (no output)';
  }

  /** How the child ended, for messages: "code 1" or "SIGTERM". */
  exitText(): string {
    return this.exitInfo ? (this.exitInfo.signal ?? `code ${this.exitInfo.code}`) : 'running';
  }

  /** An Error that names the process, the command and its last output lines. */
  failure(reason: string): Error {
    return new Error(
      `${this.name} ${reason}\n  command: ${this.command} ${this.args.join(' ')}\n  last output:\n${this.tailText()}`,
    );
  }

  /** Sends a signal without throwing when the process is already gone. */
  signal(sig: NodeJS.Signals): void {
    if (this.exitInfo || this.child.pid == null) return;
    try {
      this.child.kill(sig);
    } catch {
      /* already exited */
    }
  }

  /** SIGTERM, wait up to `graceMs`, then SIGKILL and wait for the exit. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    if (this.exitInfo) return;
    this.signal('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.exited.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.signal('SIGKILL');
      await this.exited;
    }
  }
}

/** An application or service that ran this long before it exited counts as healthy: its backoff starts over. */
const STABLE_MS = 60_000;
/** Consecutive quick crashes after which a supervisor gives up (`npm run up` then stops everything, exit code 1). */
const MAX_QUICK_CRASHES = 5;

/** Backoff before restart number `n` (1-based) of a crashed process: 1 s, 2 s, 4 s … 30 s. */
export function restartDelayMs(n: number): number {
  return Math.min(30_000, 1_000 * 2 ** Math.max(0, n - 1));
}

/** What a Restarting supervisor says and does; see its constructor. */
export interface RestartPolicy {
  /** One line per exit and restart (scripts/up.ts prefixes them with `[up]`). */
  log: (line: string) => void;
  /** Called once when the process crashed MAX_QUICK_CRASHES times in a row, each within STABLE_MS of its start. */
  onGiveUp: (why: string) => void;
  /** Called for every process started by `launch` (not for `first`); `again` is false only for the very first. */
  onStart?: (proc: SupervisedProcess, again: boolean) => void;
  /** True while the host is shutting down: an exit then is expected, nothing restarts. */
  stopping?: () => boolean;
}

/**
 * Keeps one process running, the one rule for the applications and the embedded services of
 * `npm run up`: when it exits while nobody stops it, the exit is logged with how it ended and
 * `launch` starts it again after restartDelayMs (1 s, doubling to 30 s; a process that ran a
 * minute starts its backoff over). After MAX_QUICK_CRASHES quick crashes in a row it gives up
 * (policy.onGiveUp) instead of looping on, say, a configuration error.
 */
export class Restarting {
  current!: SupervisedProcess;
  /** Crashes in a row, each within STABLE_MS of its start. */
  private crashes = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Set when the process crashed MAX_QUICK_CRASHES times in a row. */
  gaveUp = false;

  /** `first`: an already started process to supervise (a service started and probed by startEmbedded). */
  constructor(
    readonly name: string,
    private readonly launch: () => SupervisedProcess,
    private readonly policy: RestartPolicy,
    first?: SupervisedProcess,
  ) {
    this.watch(first ?? this.started(false), Date.now());
  }

  private started(again: boolean): SupervisedProcess {
    const proc = this.launch();
    this.policy.onStart?.(proc, again);
    return proc;
  }

  private watch(proc: SupervisedProcess, startedAt: number): void {
    this.current = proc;
    void proc.exited.then(() => {
      if (this.stopped || this.policy.stopping?.()) return;
      this.crashes = Date.now() - startedAt >= STABLE_MS ? 1 : this.crashes + 1;
      if (this.crashes >= MAX_QUICK_CRASHES) {
        this.gaveUp = true;
        this.policy.onGiveUp(
          `${this.name} exited (${proc.exitText()}) ${this.crashes} times in a row, each within ${STABLE_MS / 1000} s of its start; giving up`,
        );
        return;
      }
      const delay = restartDelayMs(this.crashes);
      this.policy.log(
        `${this.name} exited unexpectedly (${proc.exitText()}); restarting in ${delay / 1000} s (restart ${this.crashes} in a row)`,
      );
      this.timer = setTimeout(() => {
        if (!this.stopped && !this.policy.stopping?.()) this.watch(this.started(true), Date.now());
      }, delay);
    });
  }

  /** Cancels a pending restart; nothing is started after this call. Synchronous. */
  halt(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** halt(), then stops the running process (SIGTERM, then SIGKILL after graceMs). */
  async stop(graceMs?: number): Promise<void> {
    this.halt();
    await this.current.stop(graceMs);
  }
}

// Last resort: whatever still runs when this process exits gets SIGTERM (synchronous).
process.on('exit', () => {
  for (const p of live) p.signal('SIGTERM');
});

// When no one else handles these signals, stop the children gracefully and re-raise, so the
// default "terminate" behaviour is kept. When the host (scripts/up.ts, vitest) handles them,
// it is responsible for calling stop(); pdeathsig and the exit hook cover the rest.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  const handler = (): void => {
    if (process.listenerCount(sig) > 1) return;
    process.off(sig, handler);
    void Promise.all([...live].map((p) => p.stop(3_000))).finally(() => process.kill(process.pid, sig));
  };
  process.on(sig, handler);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until it returns true; fails early when the process exits, and after
 * `timeoutMs` with the last probe error and the process's last output lines.
 */
async function waitReady(proc: SupervisedProcess, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'not ready';
  for (;;) {
    if (proc.exitInfo) throw proc.failure(`exited (${proc.exitText()}) before it was ready`);
    try {
      if (await probe()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw proc.failure(`was not ready after ${timeoutMs} ms (last probe: ${lastError})`);
    await Promise.race([sleep(250), proc.exited]);
  }
}

/**
 * Starts a service on fresh ports and waits for it; when the child lost a port race
 * ("address already in use"), tries again with new ports.
 */
async function startService(
  portCount: number,
  preferred: (number | undefined)[],
  launch: (ports: number[]) => SupervisedProcess,
  probe: (ports: number[]) => () => Promise<boolean>,
  timeoutMs: number,
): Promise<{ proc: SupervisedProcess; ports: number[] }> {
  for (let attempt = 1; ; attempt++) {
    const ports = await pickPorts(portCount, preferred);
    const proc = launch(ports);
    try {
      await waitReady(proc, probe(ports), timeoutMs);
      return { proc, ports };
    } catch (err) {
      await proc.stop(2_000);
      const portRace = /address already in use|bind:/i.test(proc.tailText());
      if (!portRace || attempt >= PORT_RETRIES) throw err;
    }
  }
}

/** Redis readiness: a raw `PING` over TCP answered by `+PONG` (no client library needed). */
function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
  });
}

/**
 * Whether redis-server can start with `--appendonly yes` in `dir`: it already has its AOF, or it
 * has no data at all. A folder with only a snapshot (dump.rdb, from before the AOF was on) must
 * start without: Redis 7.0 would otherwise start empty and ignore the snapshot.
 */
function redisStartsWithAof(dir: string): boolean {
  return existsSync(path.join(dir, 'appendonlydir')) || !existsSync(path.join(dir, 'dump.rdb'));
}

/** Turns the AOF on in a running redis-server (it rewrites its data into the AOF) and waits for the rewrite. */
async function enableAof(port: number): Promise<void> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    await redis.config('SET', 'appendonly', 'yes');
    for (;;) {
      const info = await redis.info('persistence');
      if (/aof_enabled:1/.test(info) && /aof_rewrite_in_progress:0/.test(info) && /aof_rewrite_scheduled:0/.test(info))
        return;
      await sleep(100);
    }
  } finally {
    redis.disconnect();
  }
}

/** MongoDB readiness: the real driver connects and answers `ping`. */
async function mongoPing(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1_000, connectTimeoutMS: 1_000 });
  try {
    await client.connect();
    const res = await client.db('admin').command({ ping: 1 });
    return res.ok === 1;
  } finally {
    await client.close();
  }
}

/**
 * Temporal readiness: the frontend answers, the default namespace exists and every search
 * attribute of src/temporal/definitions.ts is registered (the dev server registers them just
 * after it starts serving, and a workflow start with an unknown attribute would fail).
 */
async function temporalReady(address: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 1_000 });
  try {
    await connection.workflowService.describeNamespace({ namespace: 'default' });
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    return SEARCH_ATTRIBUTES.every((name) => customAttributes?.[name] != null);
  } finally {
    await connection.close();
  }
}

/** Weaviate readiness: its REST readiness endpoint answers 200 (the Raft leader is elected and the schema loaded). */
async function weaviateReady(port: number): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/.well-known/ready`, { signal: AbortSignal.timeout(1_000) });
  return res.status === 200;
}

/** The environment of a child: ours, minus variables that would point it at other servers. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('TEMPORAL_') || key.startsWith('FERRETDB_')) delete env[key];
  return env;
}

/** How one embedded service is started, probed and addressed. */
interface ServiceSpec {
  /** Process name, also the log file name (`<dataDir>/<folder>/<name>.log`). */
  name: string;
  /** Data folder under dataDir. */
  folder: string;
  bin: () => string;
  portCount: number;
  /** Preferred ports, in the order of `ports` (undefined: any free port). */
  preferred?: (number | undefined)[];
  args: (dir: string, ports: number[]) => string[];
  /** Variables of this service only (Weaviate is configured by its environment). */
  env?: (dir: string, ports: number[]) => Record<string, string>;
  probe: (ports: number[]) => () => Promise<boolean>;
  /** Runs once after the first start is ready (redis: turns on the AOF of an older data folder). */
  prepare?: (dir: string, ports: number[]) => Promise<void>;
  /** The connection strings this service contributes to the result. */
  urls: (ports: number[]) => Omit<EmbeddedServices, 'stop'>;
}

/** The three services; `temporalUi` decides between a UI port and `--headless`. */
/**
 * The SQLite settings of the embedded FerretDB, in the order they apply (the busy handler before
 * WAL, as FerretDB's own defaults). `synchronous(normal)`: in WAL mode a commit is written to the
 * WAL but not fsynced, so a killed FerretDB loses nothing and only an OS crash or power loss can
 * lose the last commits: the promise the embedded Temporal (WAL, `synchronous=normal`) and Redis
 * (AOF fsynced every second) make too. SQLite's default (`full`) fsyncs every commit while holding
 * the database's one write lock, so concurrent writers queued behind each fsync (docs/decisions.md,
 * "FerretDB and MongoDB").
 */
export const SQLITE_PRAGMAS = ['busy_timeout(10000)', 'journal_mode(wal)', 'synchronous(normal)']
  .map((p) => `_pragma=${encodeURIComponent(p)}`)
  .join('&');

function serviceSpecs(
  temporalUi: boolean,
  preferredPorts: EmbeddedOptions['preferredPorts'] = {},
): Record<keyof EmbeddedOptions['need'], ServiceSpec> {
  return {
    weaviate: {
      name: 'weaviate',
      folder: 'weaviate',
      bin: () => cachedBinary('weaviate-server'),
      // REST, gRPC, cluster gossip, cluster data, Raft, Raft's internal RPC: all free ports. REST,
      // gossip and Raft bind 127.0.0.1; upstream binds gRPC and the cluster data port on every
      // interface (it listens on ":port"), which no variable changes (docs/search.md).
      portCount: 6,
      preferred: [preferredPorts.weaviate, preferredPorts.weaviateGrpc],
      args: (_dir, [http]) => ['--host', '127.0.0.1', '--port', String(http), '--scheme', 'http'],
      env: (dir, [, grpc, gossip, data, raft, raftRpc]) => ({
        PERSISTENCE_DATA_PATH: path.join(dir, 'data'),
        DEFAULT_VECTORIZER_MODULE: 'none',
        ENABLE_MODULES: '',
        CLUSTER_HOSTNAME: 'node1',
        CLUSTER_ADVERTISE_ADDR: '127.0.0.1',
        CLUSTER_BIND_ADDR: '127.0.0.1',
        CLUSTER_GOSSIP_BIND_PORT: String(gossip),
        CLUSTER_DATA_BIND_PORT: String(data),
        RAFT_PORT: String(raft),
        RAFT_INTERNAL_RPC_PORT: String(raftRpc),
        RAFT_BOOTSTRAP_EXPECT: '1',
        GRPC_PORT: String(grpc),
        AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED: 'true',
        GO_PROFILING_DISABLE: 'true',
        PROMETHEUS_MONITORING_ENABLED: 'false',
        DISABLE_TELEMETRY: 'true',
        LOG_LEVEL: 'warning',
        // Browse, grep and the tree page through a workspace's entries with offsets.
        QUERY_MAXIMUM_RESULTS: '1000000',
      }),
      probe:
        ([http]) =>
        () =>
          weaviateReady(http!),
      urls: ([http, grpc]) => ({ weaviateUrl: `http://127.0.0.1:${http}`, weaviateGrpcAddress: `127.0.0.1:${grpc}` }),
    },
    mongo: {
      name: 'ferretdb',
      folder: 'mongo',
      bin: () => cachedBinary('ferretdb'),
      portCount: 1,
      args: (dir, [port]) => [
        // SQLite (a file per data folder) needs no setup; FERRETDB_POSTGRESQL_URL selects the
        // PostgreSQL handler instead, which takes concurrent writes far better (see docs/performance-history.md, "Performance (npm run bench)").
        ...(process.env.FERRETDB_POSTGRESQL_URL
          ? ['--handler=postgresql', `--postgresql-url=${process.env.FERRETDB_POSTGRESQL_URL}`]
          : ['--handler=sqlite', `--sqlite-url=file:${dir}/?${SQLITE_PRAGMAS}`]),
        `--listen-addr=127.0.0.1:${port}`,
        '--debug-addr=-', // the default 127.0.0.1:8088 would collide between instances
        '--telemetry=disable',
        `--state-dir=${dir}`,
        '--log-level=warn',
      ],
      probe:
        ([port]) =>
        () =>
          mongoPing(`mongodb://127.0.0.1:${port}/`),
      urls: ([port]) => ({ mongoUri: `mongodb://127.0.0.1:${port}/` }),
    },
    redis: {
      name: 'redis',
      folder: 'redis',
      bin: () => {
        const bin = onPath('redis-server', '/usr/bin/redis-server');
        if (!existsSync(bin)) throw new Error('redis-server not found; run `npm run provision` first');
        return bin;
      },
      portCount: 1,
      args: (dir, [port]) => [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        // The append-only file, fsynced every second: a crash (even SIGKILL) loses at most about the
        // last second of writes, where a snapshot a minute lost up to a minute of stream entries.
        // A folder that only has an older snapshot starts from it and turns the AOF on (prepare).
        '--appendonly',
        redisStartsWithAof(dir) ? 'yes' : 'no',
        '--appendfsync',
        'everysec',
        '--save',
        '',
        '--daemonize',
        'no',
        '--logfile',
        '',
        '--loglevel',
        'warning',
      ],
      probe:
        ([port]) =>
        () =>
          redisPing(port),
      prepare: (dir, [port]) => (redisStartsWithAof(dir) ? Promise.resolve() : enableAof(port!)),
      urls: ([port]) => ({ redisUrl: `redis://127.0.0.1:${port}` }),
    },
    temporal: {
      name: 'temporal',
      folder: 'temporal',
      bin: () => cachedBinary('temporal'),
      portCount: temporalUi ? 2 : 1,
      preferred: [preferredPorts.temporal, preferredPorts.temporalUi],
      args: (dir, [port, uiPort]) => [
        'server',
        'start-dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(port),
        ...(temporalUi ? ['--ui-port', String(uiPort)] : ['--headless']),
        '--db-filename',
        path.join(dir, 'temporal.db'),
        '--namespace',
        'default',
        '--log-level',
        'warn',
        // The server hands an activity scheduled by a workflow task straight back to the worker
        // that completed the task (no poll round trip): first tokens arrive sooner.
        '--dynamic-config-value',
        'system.enableActivityEagerExecution=true',
        // A backlog of the task queue is dispatched round robin between workspaces (each run's
        // fairness key, src/jobs/service.ts), so one workspace's burst cannot starve the others.
        '--dynamic-config-value',
        'matching.enableFairness=true',
        '--sqlite-pragma',
        'journal_mode=wal',
        '--sqlite-pragma',
        'synchronous=normal',
        ...SEARCH_ATTRIBUTES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
      ],
      probe:
        ([port]) =>
        () =>
          temporalReady(`127.0.0.1:${port}`),
      urls: ([port, uiPort]) => ({
        temporalAddress: `127.0.0.1:${port}`,
        ...(temporalUi ? { temporalUiUrl: `http://127.0.0.1:${uiPort}` } : {}),
      }),
    },
  };
}

/**
 * Starts the requested services in parallel, each with its own data folder under
 * `opts.dataDir`, and resolves once every one answers. When any of them fails, the ones
 * already started are stopped and the error (with the child's last output) is thrown.
 * Data folders persist, so a caller that passes the same dataDir gets its data back.
 */
export async function startEmbedded(opts: EmbeddedOptions): Promise<EmbeddedServices> {
  const timeoutMs = opts.readyTimeoutMs ?? Number(process.env.CORTEX_EMBEDDED_TIMEOUT_MS ?? 90_000);
  const started: SupervisedProcess[] = [];
  const result: Omit<EmbeddedServices, 'stop'> = {};
  const env = childEnv();
  const specs = serviceSpecs(opts.temporalUi, opts.preferredPorts);

  const supervisors: Restarting[] = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const s of supervisors) s.halt(); // no restart from here on
      const running = started.filter((p) => !p.exitInfo);
      if (running.length) opts.log(`stopping ${running.map((p) => p.name).join(', ')}`);
      await Promise.all(running.map((p) => p.stop()));
    })());

  const start = async (spec: ServiceSpec): Promise<void> => {
    const bin = spec.bin();
    const dir = path.resolve(opts.dataDir, spec.folder);
    await mkdir(dir, { recursive: true });
    const launch = (ports: number[]): SupervisedProcess => {
      const proc = new SupervisedProcess(spec.name, bin, spec.args(dir, ports), {
        cwd: dir,
        env: spec.env ? { ...env, ...spec.env(dir, ports) } : env,
        logFile: path.join(dir, `${spec.name}.log`),
      });
      for (let i = started.length - 1; i >= 0; i--) if (started[i]!.exitInfo) started.splice(i, 1);
      started.push(proc);
      return proc;
    };
    const { proc, ports } = await startService(spec.portCount, spec.preferred ?? [], launch, spec.probe, timeoutMs);
    await spec.prepare?.(dir, ports);
    const urls = spec.urls(ports);
    Object.assign(result, urls);
    if (proc.child.pid) result.pids = { ...result.pids, [spec.name]: proc.child.pid };
    opts.log(`${spec.name.padEnd(9)} ${Object.values(urls).join('  ')}  (data ${dir})`);
    if (!opts.restart || stopping) return;
    // Restarts keep the ports (clients reconnect to the same address) and the data folder.
    const { onGiveUp } = opts.restart;
    supervisors.push(
      new Restarting(
        spec.name,
        () => launch(ports),
        {
          log: opts.log,
          onGiveUp,
          stopping: () => stopping !== undefined,
          onStart: (restarted) => {
            opts.log(
              `${spec.name} restarted (pid ${restarted.child.pid ?? '?'}) on ${Object.values(urls).join('  ')} with its data in ${dir}`,
            );
            void waitReady(restarted, spec.probe(ports), timeoutMs).then(
              () => opts.log(`${spec.name} is ready again`),
              // An exit is reported (and restarted) by the supervisor; a start that hangs is said here.
              (err: unknown) => {
                if (!restarted.exitInfo) opts.log(`warning: ${err instanceof Error ? err.message : String(err)}`);
              },
            );
          },
        },
        proc,
      ),
    );
  };

  const wanted = (Object.keys(specs) as (keyof typeof specs)[]).filter((key) => opts.need[key] === true);
  const outcomes = await Promise.allSettled(wanted.map((key) => start(specs[key])));
  const failures = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failures.length) {
    await stop();
    const reasons = failures.map((f) => (f.reason instanceof Error ? f.reason.message : String(f.reason)));
    throw new Error(`embedded services failed to start:\n${reasons.join('\n')}`);
  }
  return { ...result, stop };
}

/** A local Redis Cluster (startRedisCluster): its nodes as REDIS_CLUSTER_NODES takes them, and the one way to stop it. */
export interface EmbeddedRedisCluster {
  /** `127.0.0.1:<port>,…`, one per master. */
  nodes: string;
  stop(): Promise<void>;
}

/** Every node of a cluster says `cluster_state:ok` and serves all 16384 slots. */
async function clusterReady(ports: number[]): Promise<boolean> {
  for (const port of ports) {
    const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await redis.connect();
      const info = String(await redis.call('CLUSTER', 'INFO'));
      if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
    } finally {
      redis.disconnect();
    }
  }
  return true;
}

/**
 * Starts a Redis Cluster of `masters` (3) redis-servers on free loopback ports, no replicas, no
 * persistence (each in a fresh folder under `dataDir`), joins them with `redis-cli --cluster
 * create` and resolves once every node serves every slot: what the cluster tests and the bench
 * run the Redis code against (docs/scaling.md). The cluster bus ports are chosen too
 * (`--cluster-port`), so nothing depends on port + 10000 being free.
 */
export async function startRedisCluster(opts: {
  dataDir: string;
  masters?: number;
  log: (line: string) => void;
  readyTimeoutMs?: number;
}): Promise<EmbeddedRedisCluster> {
  const masters = opts.masters ?? 3;
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const server = onPath('redis-server', '/usr/bin/redis-server');
  const cli = onPath('redis-cli', '/usr/bin/redis-cli');
  if (!existsSync(server) || !existsSync(cli))
    throw new Error('redis-server or redis-cli not found; run `npm run provision` first');
  const env = childEnv();
  for (let attempt = 1; ; attempt++) {
    const ports = await freePorts(2 * masters);
    const [data, bus] = [ports.slice(0, masters), ports.slice(masters)];
    const procs: SupervisedProcess[] = [];
    const stop = async () => {
      await Promise.all(procs.map((p) => p.stop(3_000)));
    };
    try {
      for (const [i, port] of data.entries()) {
        const dir = path.resolve(opts.dataDir, 'redis-cluster', String(port));
        await mkdir(dir, { recursive: true });
        // prettier-ignore
        const args = [
          '--port', String(port), '--cluster-port', String(bus[i]), '--bind', '127.0.0.1', '--dir', dir,
          '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000',
          '--appendonly', 'no', '--save', '', '--daemonize', 'no', '--logfile', '', '--loglevel', 'warning',
        ];
        procs.push(
          new SupervisedProcess(`redis-cluster-${i + 1}`, server, args, {
            cwd: dir,
            env,
            logFile: path.join(dir, 'redis.log'),
          }),
        );
      }
      await Promise.all(procs.map((p, i) => waitReady(p, () => redisPing(data[i]), timeoutMs)));
      const create = new SupervisedProcess(
        'redis-cli',
        cli,
        ['--cluster', 'create', ...data.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
        { cwd: opts.dataDir, env },
      );
      await create.exited;
      if (create.exitInfo?.code !== 0) throw create.failure(`exited (${create.exitText()})`);
      await waitReady(procs[0], () => clusterReady(data), timeoutMs);
      const nodes = data.map((p) => `127.0.0.1:${p}`).join(',');
      opts.log(`redis cluster ${nodes}  (${masters} masters, data ${path.resolve(opts.dataDir, 'redis-cluster')})`);
      return { nodes, stop };
    } catch (err) {
      const portRace = procs.some((p) => /address already in use|bind:/i.test(p.tailText()));
      await stop();
      if (!portRace || attempt >= PORT_RETRIES) throw err;
    }
  }
}
