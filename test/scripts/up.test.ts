import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../scripts/embedded.js';
import { makeClient } from '../support/app.js';
import { settleJob } from '../support/jobs.js';

/*
 * `npm run up` (scripts/up.ts) as a user runs it, against the test's FerretDB, Redis and Temporal
 * (global-setup puts their URLs in the environment, so `up` starts no embedded services), on
 * loopback ports of its own and a data folder of its own. Bounded: every wait has a deadline, and
 * the process is killed at the end whatever happened.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Output lines of the `up` process, and a way to wait for one. */
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
  /** The first line (from `from` on) matching `re`; fails after `ms` with the output so far. */
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

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let up: ChildProcess | undefined;
let dataDir = '';
let squatter: Server | undefined;
afterAll(async () => {
  squatter?.close();
  if (up?.pid && up.exitCode === null) up.kill('SIGKILL'); // its children get SIGTERM by pdeathsig
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('npm run up', () => {
  it('restarts a killed worker with backoff, a run then completes, and Ctrl-C stops everything', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-up-'));
    const [apiPort, snakePort] = await freePorts(2);
    // Someone already listens on the snake's port: `up` moves the snake to the next free one.
    squatter = createServer();
    await new Promise<void>((r) => squatter!.listen(snakePort, '127.0.0.1', r));
    const tag = randomUUID().slice(0, 8);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(apiPort),
      SNAKE_PORT: String(snakePort),
      MONGODB_DB: `cortex_up${tag}`,
      REDIS_PREFIX: `up${tag}:`,
      TEMPORAL_TASK_QUEUE: `tq-up-${tag}`,
      LOG_LEVEL: 'info',
      RECONCILE_SCHEDULES_ON_START: 'false',
    };
    for (const k of [
      'BOOTSTRAP_API_KEY',
      'BOOTSTRAP_WORKSPACE_ID',
      'BOOTSTRAP_BRAIN_ID',
      'OPENAI_BASE_URL',
      'OPENAI_API_KEY',
    ])
      delete env[k];
    up = spawn(process.execPath, ['--import', 'tsx', 'scripts/up.ts'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = new Output();
    for (const stream of [up.stdout!, up.stderr!]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) out.push(l);
      });
    }
    const exited = new Promise<number | null>((resolve) => up!.once('exit', (code) => resolve(code)));

    // Up: the banner names the API on the port asked for, the key and the brain.
    await out.wait(/Cortex is up/, 150_000);
    const api = (await out.wait(/^\s+API\s+(http:\S+)/, 1_000))[1]!;
    const key = (await out.wait(/^\s+API key\s+(\S+)/, 1_000))[1]!;
    const brainId = (await out.wait(/^\s+Brain id\s+(\S+)/, 1_000))[1]!;
    expect(api).toBe(`http://127.0.0.1:${apiPort}`);
    // The console is served by the API it names (built by provisioning).
    expect((await out.wait(/^\s+Console\s+(http:\S+)/, 1_000))[1]).toBe(`${api}/console`);
    const consolePage = await fetch(`${api}/console`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toContain('<div id="root"></div>');
    const movedTo = Number(
      (await out.wait(new RegExp(`^\\[up\\] port ${snakePort} is taken: the snake listens on (\\d+)`), 1_000))[1],
    );
    expect(movedTo).toBeGreaterThan(snakePort!);
    expect((await out.wait(/^\s+Snake\s+(http:\S+)/, 1_000))[1]).toBe(`http://127.0.0.1:${movedTo}`);
    const pids = Object.fromEntries(
      await Promise.all(
        ['api', 'worker', 'snake'].map(
          async (name) =>
            [
              name,
              Number((await out.wait(new RegExp(`^\\[up\\] ${name} started \\(pid (\\d+)\\)`), 1_000))[1]),
            ] as const,
        ),
      ),
    );
    await out.wait(/worker\s+│ .*worker running/, 60_000);

    // The worker dies hard; `up` logs it and starts a new one after the first backoff step.
    const mark = out.lines.length;
    process.kill(pids.worker!, 'SIGKILL');
    await out.wait(/^\[up\] worker exited unexpectedly \(SIGKILL\); restarting in 1 s/, 10_000, mark);

    // A run started while the worker is down completes on the restarted one.
    const client = makeClient(api);
    const neuron = await client.post('/v1/neurons', key, {
      name: `after-restart-${tag}`,
      brain_id: brainId,
      neuron_config: { model: 'local/echo' },
    });
    expect(neuron.status).toBe(201);
    const inv = await client.post(
      `/v1/neurons/${String(neuron.body.id)}/invoke`,
      key,
      { message: 'still here?' },
      { 'x-brain-id': brainId },
    );
    expect(inv.status).toBe(202);
    const restarted = Number((await out.wait(/^\[up\] worker started \(pid (\d+)\)/, 15_000, mark))[1]);
    expect(restarted).not.toBe(pids.worker);
    const job = await settleJob(client, key, String(inv.body.job_id), 90_000, 250);
    expect(job.status).toBe('completed');
    expect(alive(pids.api!)).toBe(true); // the API was never restarted

    // Ctrl-C: everything stops, exit code 0, no process left behind.
    up.kill('SIGINT');
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 40_000))]);
    expect(code).toBe(0);
    for (const pid of [pids.api!, restarted, pids.snake!]) expect(alive(pid), `pid ${pid} still runs`).toBe(false);
  }, 300_000);
});
