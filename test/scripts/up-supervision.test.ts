import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../scripts/embedded.js';
import { makeClient } from '../support/app.js';

/*
 * The real `npm run up` (package.json: provisioning for running, then scripts/up.ts), with the
 * test's FerretDB and Temporal but its own embedded redis-server, on loopback ports and a data
 * folder of its own. Every wait has a deadline; whatever is left is killed at the end.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Every process below `pid` (children, grandchildren …), read from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the command name (which may hold spaces) start at the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* exited meanwhile */
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}
const commOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
};
/** Alive and not a zombie waiting for its parent. */
const alive = (pid: number): boolean => {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/** Output lines of the process, and a way to wait for one. */
class Output {
  readonly lines: string[] = [];
  private waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  push(line: string): void {
    this.lines.push(line);
    for (const w of [...this.waiters]) {
      const m = w.re.exec(line);
      if (m) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  }
  wait(re: RegExp, ms: number, from = 0): Promise<RegExpMatchArray> {
    for (const line of this.lines.slice(from)) {
      const m = re.exec(line);
      if (m) return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no line matching ${re} within ${ms} ms; output:\n${this.lines.slice(-60).join('\n')}`)),
        ms,
      );
      this.waiters.push({
        re,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }
}

async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return check();
}

let npm: ChildProcess | undefined;
let tree: number[] = [];
let dataDir = '';
let redis: Redis | undefined;
afterAll(async () => {
  redis?.disconnect();
  const left = new Set([...tree, ...(npm?.pid ? descendants(npm.pid) : [])]);
  for (const pid of [npm?.pid, ...left])
    if (pid && alive(pid))
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('npm run up supervises everything it starts', () => {
  it('a SIGKILLed redis-server is restarted on its port with its data and the API is healthy again; SIGTERM to npm leaves no process behind', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-up-'));
    const [apiPort, snakePort] = await freePorts(2);
    const tag = randomUUID().slice(0, 8);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(apiPort),
      SNAKE_PORT: String(snakePort),
      MONGODB_DB: `cortex_up${tag}`,
      REDIS_PREFIX: `up${tag}:`,
      TEMPORAL_TASK_QUEUE: `tq-up-${tag}`,
      LOG_LEVEL: 'warn',
      RECONCILE_SCHEDULES_ON_START: 'false',
    };
    // No REDIS_URL: `up` runs its own redis-server (FerretDB and Temporal are the test's).
    for (const k of [
      'REDIS_URL',
      'BOOTSTRAP_API_KEY',
      'BOOTSTRAP_WORKSPACE_ID',
      'BOOTSTRAP_BRAIN_ID',
      'OPENAI_BASE_URL',
      'OPENAI_API_KEY',
    ])
      delete env[k];
    npm = spawn('npm', ['run', 'up'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = new Output();
    for (const stream of [npm.stdout!, npm.stderr!]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) out.push(l);
      });
    }

    await out.wait(/Cortex is up/, 180_000);
    // Provisioning for running only: the test tools are skipped, and it says so.
    await out.wait(/^\[provision\] chromium, versitygw, pocketsphinx, sox, flite, espeak-ng: skipped/, 1_000);
    const redisUrl = (await out.wait(/^\[up\] redis\s+(redis:\/\/\S+)/, 1_000))[1]!;
    const key = (await out.wait(/^\s+API key\s+(\S+)/, 1_000))[1]!;
    const api = makeClient(`http://127.0.0.1:${apiPort}`);

    // Stream entries written a second before the crash survive it (the AOF is fsynced every second).
    redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined); // refused connections while redis-server is down; it reconnects
    const stream = `up${tag}:durability`;
    for (let i = 0; i < 50; i++) await redis.xadd(stream, '*', 'n', String(i));
    await new Promise((r) => setTimeout(r, 1_500));

    const redisPid = descendants(npm.pid!).find((p) => commOf(p) === 'redis-server');
    expect(redisPid, 'redis-server below npm').toBeDefined();
    const mark = out.lines.length;
    process.kill(redisPid!, 'SIGKILL');
    await out.wait(/^\[up\] redis exited unexpectedly \(SIGKILL\); restarting in 1 s/, 10_000, mark);
    const restarted = Number(
      (await out.wait(/^\[up\] redis restarted \(pid (\d+)\) on (redis:\/\/\S+)/, 10_000, mark))[1],
    );
    expect((await out.wait(/^\[up\] redis restarted \(pid \d+\) on (redis:\/\/\S+)/, 1_000, mark))[1]).toBe(redisUrl);
    await out.wait(/^\[up\] redis is ready again/, 30_000, mark);
    expect(restarted).not.toBe(redisPid);
    expect(await redis.xlen(stream)).toBe(50);
    // The API reconnects by itself: healthy again, and an authenticated request (rate limits live in Redis) answers.
    expect(await until(async () => (await api.get('/health')).status === 200, 30_000)).toBe(true);
    expect((await api.get('/v1/config/models', key)).status).toBe(200);

    // SIGTERM to npm itself: every process of the tree stops (npm does not wait for its script).
    tree = descendants(npm.pid!);
    expect(tree.map(commOf)).toEqual(expect.arrayContaining(['redis-server', 'node']));
    expect(tree.length).toBeGreaterThanOrEqual(5); // up, api, worker, snake, redis-server
    npm.kill('SIGTERM');
    const gone = await until(() => tree.every((pid) => !alive(pid)), 40_000);
    expect(
      tree.filter(alive).map((pid) => `${pid} ${commOf(pid)}`),
      'still running',
    ).toEqual([]);
    expect(gone).toBe(true);
  }, 300_000);
});
