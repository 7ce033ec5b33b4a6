/**
 * Embedded services runner: starts FerretDB (MongoDB wire protocol), redis-server and the
 * Temporal dev server as child processes on free loopback ports.
 *
 * Why it exists: on a fresh machine of this project there is no MongoDB, Redis or Temporal
 * cluster (DESIGN.md, "Real components, and how they start"). `npm run up` (scripts/up.ts)
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
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { MongoClient } from 'mongodb';
import { SEARCH_ATTRIBUTES } from '../src/temporal/definitions.js';

/** What to start and where; see startEmbedded. */
export interface EmbeddedOptions {
  /** Root folder; each service gets its own subfolder (mongo/, redis/, temporal/). */
  dataDir: string;
  /** Which services to start; a service already provided by a URL variable is not needed. */
  need: { mongo: boolean; redis: boolean; temporal: boolean };
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
  preferredPorts?: { temporal?: number; temporalUi?: number };
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
export async function nextFreePort(preferred: number, skip: ReadonlySet<number> = new Set(), span = 100): Promise<number> {
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
    this.child = spawn(cmd, argv, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: hasSetpriv });
    live.add(this);
    for (const [streamName, stream] of [['stdout', this.child.stdout], ['stderr', this.child.stderr]] as const) {
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
    return new Error(`${this.name} ${reason}\n  command: ${this.command} ${this.args.join(' ')}\n  last output:\n${this.tailText()}`);
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
  probe: (ports: number[]) => () => Promise<boolean>;
  /** The connection strings this service contributes to the result. */
  urls: (ports: number[]) => Omit<EmbeddedServices, 'stop'>;
}

/** The three services; `temporalUi` decides between a UI port and `--headless`. */
function serviceSpecs(temporalUi: boolean, preferredPorts: EmbeddedOptions['preferredPorts'] = {}): Record<keyof EmbeddedOptions['need'], ServiceSpec> {
  return {
    mongo: {
      name: 'ferretdb',
      folder: 'mongo',
      bin: () => cachedBinary('ferretdb'),
      portCount: 1,
      args: (dir, [port]) => [
        // SQLite (a file per data folder) needs no setup; FERRETDB_POSTGRESQL_URL selects the
        // PostgreSQL handler instead, which takes concurrent writes far better (see docs/decisions.md).
        ...(process.env.FERRETDB_POSTGRESQL_URL
          ? ['--handler=postgresql', `--postgresql-url=${process.env.FERRETDB_POSTGRESQL_URL}`]
          : ['--handler=sqlite', `--sqlite-url=file:${dir}/`]),
        `--listen-addr=127.0.0.1:${port}`,
        '--debug-addr=-', // the default 127.0.0.1:8088 would collide between instances
        '--telemetry=disable',
        `--state-dir=${dir}`,
        '--log-level=warn',
      ],
      probe: ([port]) => () => mongoPing(`mongodb://127.0.0.1:${port}/`),
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
        '--port', String(port),
        '--bind', '127.0.0.1',
        '--dir', dir,
        '--save', '60 1', // a snapshot a minute and at shutdown, so `npm run up` keeps its streams
        '--appendonly', 'no',
        '--daemonize', 'no',
        '--logfile', '',
        '--loglevel', 'warning',
      ],
      probe: ([port]) => () => redisPing(port),
      urls: ([port]) => ({ redisUrl: `redis://127.0.0.1:${port}` }),
    },
    temporal: {
      name: 'temporal',
      folder: 'temporal',
      bin: () => cachedBinary('temporal'),
      portCount: temporalUi ? 2 : 1,
      preferred: [preferredPorts.temporal, preferredPorts.temporalUi],
      args: (dir, [port, uiPort]) => [
        'server', 'start-dev',
        '--ip', '127.0.0.1',
        '--port', String(port),
        ...(temporalUi ? ['--ui-port', String(uiPort)] : ['--headless']),
        '--db-filename', path.join(dir, 'temporal.db'),
        '--namespace', 'default',
        '--log-level', 'warn',
        // The server hands an activity scheduled by a workflow task straight back to the worker
        // that completed the task (no poll round trip): first tokens arrive sooner.
        '--dynamic-config-value', 'system.enableActivityEagerExecution=true',
        '--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal',
        ...SEARCH_ATTRIBUTES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
      ],
      probe: ([port]) => () => temporalReady(`127.0.0.1:${port}`),
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

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
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
        env,
        logFile: path.join(dir, `${spec.name}.log`),
      });
      started.push(proc);
      return proc;
    };
    const { ports } = await startService(spec.portCount, spec.preferred ?? [], launch, spec.probe, timeoutMs);
    const urls = spec.urls(ports);
    Object.assign(result, urls);
    opts.log(`${spec.name.padEnd(9)} ${Object.values(urls).join('  ')}  (data ${dir})`);
  };

  const wanted = (Object.keys(specs) as (keyof typeof specs)[]).filter((key) => opts.need[key]);
  const outcomes = await Promise.allSettled(wanted.map((key) => start(specs[key])));
  const failures = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failures.length) {
    await stop();
    const reasons = failures.map((f) => (f.reason instanceof Error ? f.reason.message : String(f.reason)));
    throw new Error(`embedded services failed to start:\n${reasons.join('\n')}`);
  }
  return { ...result, stop };
}
