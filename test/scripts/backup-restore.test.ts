import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { Redis } from 'ioredis';
import { BSON, MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts, startEmbedded } from '../../scripts/embedded.js';
import { makeClient } from '../support/app.js';
import { startProviderSim, type ProviderSim } from '../support/provider-sim.js';

/*
 * Backup and restore of the embedded deployment (docs/operations.md, "Backup and restore"), as an
 * operator runs them: `npm run up` on a data folder of its own (its own FerretDB, Redis and Temporal,
 * not the test's), `npm run backup` while 20 runs stream and a schedule fires, `npm run restore` into
 * another folder, then the restored store, Redis streams, blobs and Temporal schedules compared with
 * the original, and `npm run up` on the restored folder on other ports, where no run stays stuck.
 * Bounded: loopback only, 20 runs, every wait with a deadline, every process killed at the end.
 */
const { EJSON } = BSON;
const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = (script: string) => [process.execPath, ['--import', 'tsx', script]] as const;

/** A child process's output lines, and a way to wait for one. */
class Proc {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  private waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  constructor(readonly child: ChildProcess) {
    for (const stream of [child.stdout!, child.stderr!]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) this.push(l);
      });
    }
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }
  private push(line: string): void {
    this.lines.push(line);
    for (const w of [...this.waiters]) {
      const m = w.re.exec(line);
      if (m) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  }
  wait(re: RegExp, ms: number): Promise<RegExpMatchArray> {
    for (const line of this.lines) {
      const m = re.exec(line);
      if (m) return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no line matching ${re} within ${ms} ms; output:\n${this.lines.slice(-80).join('\n')}`)),
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

const procs: Proc[] = [];
const folders: string[] = [];
let sim: ProviderSim | undefined;
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await sim?.close();
  for (const f of folders) await rm(f, { recursive: true, force: true });
});

function start(script: string, env: NodeJS.ProcessEnv, args: string[] = []): Proc {
  const [cmd, argv] = tsx(script);
  const p = new Proc(spawn(cmd, [...argv, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  procs.push(p);
  return p;
}

/** The environment of an `up` of our own: no service URL of the test's, its own folder and ports. */
async function upEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): Promise<NodeJS.ProcessEnv> {
  const [apiPort, snakePort] = await freePorts(2);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(apiPort),
    SNAKE_PORT: String(snakePort),
    OPENAI_BASE_URL: sim!.baseURL,
    OPENAI_API_KEY: 'test-key',
    LOG_LEVEL: 'info',
    ...extra,
  };
  for (const k of [
    'MONGODB_URI',
    'REDIS_URL',
    'REDIS_CLUSTER_NODES',
    'TEMPORAL_ADDRESS',
    'BOOTSTRAP_API_KEY',
    'BOOTSTRAP_WORKSPACE_ID',
    'BOOTSTRAP_BRAIN_ID',
    'JWT_SECRET',
    'MONGODB_DB',
    'REDIS_PREFIX',
    'TEMPORAL_TASK_QUEUE',
  ])
    delete env[k];
  return env;
}

/** Starts `npm run up` and reads its banner and service lines. */
async function up(env: NodeJS.ProcessEnv) {
  const p = start('scripts/up.ts', env);
  await p.wait(/Cortex is up/, 240_000);
  const get = async (re: RegExp) => (await p.wait(re, 1_000))[1]!;
  return {
    proc: p,
    api: await get(/^\s+API\s+(http:\S+)/),
    key: await get(/^\s+API key\s+(\S+)/),
    brainId: await get(/^\s+Brain id\s+(\S+)/),
    mongoUri: await get(/^\[up\] ferretdb\s+(mongodb:\S+)/),
    redisUrl: await get(/^\[up\] redis\s+(redis:\S+)/),
    temporalAddress: await get(/^\[up\] temporal\s+(127\.0\.0\.1:\d+)/),
  };
}

type Dump = Map<string, string>;
/** Every document of every collection, by `collection/_id`, in canonical extended JSON. */
async function dumpStore(uri: string): Promise<Dump> {
  const client = new MongoClient(uri);
  try {
    const db = client.db('cortex');
    const out: Dump = new Map();
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      for (const doc of await db.collection(name).find({}).toArray())
        out.set(`${name}/${EJSON.stringify(doc._id)}`, EJSON.stringify(doc, { relaxed: false }));
    }
    return out;
  } finally {
    await client.close();
  }
}

/** Every finished blob file under `dir`, by relative path, with its bytes. */
async function dumpBlobs(dir: string, rel = ''): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (!existsSync(path.join(dir, rel))) return out;
  for (const e of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const child = path.join(rel, e.name);
    if (e.isDirectory()) for (const [k, v] of await dumpBlobs(dir, child)) out.set(k, v);
    else if (!e.name.endsWith('.part')) out.set(child, await readFile(path.join(dir, child)));
  }
  return out;
}

/** Length of every stream key. */
async function dumpStreams(url: string): Promise<Map<string, number>> {
  const redis = new Redis(url);
  try {
    const out = new Map<string, number>();
    for (const key of await redis.keys('*'))
      if ((await redis.type(key)) === 'stream') out.set(key, await redis.xlen(key));
    return out;
  } finally {
    redis.disconnect();
  }
}

/** Every Temporal Schedule: id → its spec (intervals, cron) and action's workflow type. */
async function dumpSchedules(address: string): Promise<Map<string, string>> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const out = new Map<string, string>();
    for await (const s of client.schedule.list()) {
      const d = await client.schedule.getHandle(s.scheduleId).describe();
      out.set(
        s.scheduleId,
        JSON.stringify({
          intervals: d.spec.intervals,
          calendars: d.spec.calendars,
          type: d.action.type === 'startWorkflow' ? d.action.workflowType : d.action.type,
          paused: d.state.paused,
        }),
      );
    }
    return out;
  } finally {
    await connection.close();
  }
}

const OPEN = ['pending', 'running', 'waiting', 'paused'];

describe('npm run backup / npm run restore', () => {
  it('backs up while 20 runs stream and a schedule fires; the restore holds every record and no run stays stuck', async () => {
    sim = await startProviderSim({ firstTokenMs: [200, 600], interTokenMs: [80, 150], tokens: [150, 250], seed: 46 });
    const dirA = await mkdtemp(path.join(os.tmpdir(), 'cortex-backup-a-'));
    const work = await mkdtemp(path.join(os.tmpdir(), 'cortex-backup-files-'));
    const dirB = path.join(work, 'restored');
    folders.push(dirA, work);
    const a = await up(await upEnv(dirA));
    const client = makeClient(a.api);
    const brain = { 'x-brain-id': a.brainId };

    // Records of every kind the test can reach: a neuron, an artifact, an asset (a blob), a schedule.
    const neuron = await client.post('/v1/neurons', a.key, {
      name: 'backup-runner',
      brain_id: a.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You are terse.' },
    });
    expect(neuron.status).toBe(201);
    const neuronId = String(neuron.body.id);
    expect(
      (await client.post('/v1/artifacts', a.key, { title: 'Notes', content: 'kept', skip_embedding: true }, brain))
        .status,
    ).toBe(201);
    const form = new FormData();
    form.append('file', new Blob(['# Tides\n\nHigh tide at 06:12.'], { type: 'text/markdown' }), 'tides.md');
    const asset = await fetch(`${a.api}/v1/assets/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}`, ...brain },
      body: form,
    });
    expect(asset.status).toBe(201);
    const schedule = await client.post('/v1/receptors/subscribe', a.key, {
      template: 'schedule',
      name: 'every two seconds',
      brain_id: a.brainId,
      target: { kind: 'neuron', id: neuronId },
      timing: { interval: 2 },
      payload: { message: 'tick' },
    });
    expect(schedule.status).toBe(201);

    // 20 runs, each read as a stream by a client until it ends.
    const runs: string[] = [];
    for (let i = 0; i < 20; i++) {
      const inv = await client.post(`/v1/neurons/${neuronId}/invoke`, a.key, { message: `run ${i}` }, brain);
      expect(inv.status).toBe(202);
      runs.push(String(inv.body.job_id));
    }
    const streamed = new Map<string, number>();
    const readers = runs.map(async (id) => {
      const res = await fetch(`${a.api}/v1/jobs/${id}/stream`, {
        headers: { authorization: `Bearer ${a.key}`, accept: 'text/event-stream' },
        signal: AbortSignal.timeout(60_000),
      }).catch(() => null);
      if (!res?.body) return;
      try {
        for await (const chunk of res.body) streamed.set(id, (streamed.get(id) ?? 0) + (chunk as Uint8Array).length);
      } catch {
        /* the platform stopped, or the time ran out */
      }
    });
    // The schedule has fired and the runs are streaming.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const fired = await client.get(`/v1/jobs?receptor_id=${String(schedule.body.id)}`, a.key);
      if ((fired.body as { jobs?: unknown[] }).jobs?.length && streamed.size >= 5) break;
      if (Date.now() > deadline) throw new Error(`no fire or no stream within 60 s (${streamed.size} streams)`);
      await new Promise((r) => setTimeout(r, 200));
    }

    const before = {
      store: await dumpStore(a.mongoUri),
      blobs: await dumpBlobs(path.join(dirA, 'blobs')),
      streams: await dumpStreams(a.redisUrl),
      schedules: await dumpSchedules(a.temporalAddress),
    };
    const archive = path.join(work, 'cortex.backup.tgz');
    const backup = start('scripts/backup.ts', { ...process.env, DATA_DIR: dirA }, [archive]);
    expect(await Promise.race([backup.exited, new Promise((r) => setTimeout(() => r('timeout'), 120_000))])).toBe(0);
    const after = {
      store: await dumpStore(a.mongoUri),
      streams: await dumpStreams(a.redisUrl),
      schedules: await dumpSchedules(a.temporalAddress),
    };
    const openAtBackup = [...after.store.entries()]
      .filter(([k, v]) => k.startsWith('jobs/') && OPEN.includes((EJSON.parse(v) as { status: string }).status))
      .map(([k]) => JSON.parse(k.slice('jobs/'.length)) as string);
    // Progress on stderr, and the archive's checksum beside it.
    for (const step of [
      'temporal: VACUUM INTO',
      'store: VACUUM INTO',
      'redis: snapshot',
      'blobs:',
      'manifest:',
      'archive:',
    ])
      expect(backup.lines.some((l) => l.startsWith(`[backup] ${step}`))).toBe(true);
    expect((await readFile(`${archive}.sha256`, 'utf8')).split(/\s+/)[0]).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(archive)).size).toBeGreaterThan(0);

    // The original stops (runs in flight at the backup continue, or not, in the restored copy only).
    a.proc.child.kill('SIGINT');
    expect(await Promise.race([a.proc.exited, new Promise((r) => setTimeout(() => r('timeout'), 60_000))])).toBe(0);
    await Promise.allSettled(readers);

    // A restore refuses a folder that is not empty, and fills an empty one.
    const refused = start('scripts/restore.ts', { ...process.env, DATA_DIR: dirA }, [archive]);
    expect(await refused.exited).toBe(1);
    expect(refused.lines.join('\n')).toMatch(/is not empty/);
    // A damaged archive is refused before anything is written.
    const damaged = path.join(work, 'damaged.tgz');
    const bytes = await readFile(archive);
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    await writeFile(damaged, bytes);
    await copyFile(`${archive}.sha256`, `${damaged}.sha256`);
    const refusedDamaged = start('scripts/restore.ts', { ...process.env, DATA_DIR: path.join(work, 'never') }, [
      damaged,
    ]);
    expect(await refusedDamaged.exited).toBe(1);
    expect(refusedDamaged.lines.join('\n')).toMatch(/checksum mismatch/);
    expect(existsSync(path.join(work, 'never'))).toBe(false);
    const restored = start('scripts/restore.ts', { ...process.env, DATA_DIR: dirB }, [archive]);
    expect(await restored.exited, restored.lines.join('\n')).toBe(0);
    expect(restored.lines.some((l) => /parts: all \d+ match their SHA-256/.test(l))).toBe(true);

    // Every record compared, with the restored services alone (before any application changes them):
    // a record that did not change while the backup ran is identical; one that changed is there.
    const services = await startEmbedded({
      dataDir: dirB,
      need: { mongo: true, redis: true, temporal: true },
      temporalUi: false,
      log: () => undefined,
    });
    try {
      const r = {
        store: await dumpStore(services.mongoUri!),
        streams: await dumpStreams(services.redisUrl!),
        schedules: await dumpSchedules(services.temporalAddress!),
      };
      let same = 0;
      for (const [k, v] of before.store) {
        if (!after.store.has(k)) continue; // deleted while the backup ran
        expect(r.store.has(k), `${k} is missing after the restore`).toBe(true);
        if (after.store.get(k) === v) {
          expect(r.store.get(k), `${k} differs after the restore`).toBe(v);
          same++;
        }
      }
      expect(same).toBeGreaterThan(50);
      // Streams (job streams, the resource feed) that lived through the backup are there.
      for (const key of before.streams.keys())
        if (after.streams.has(key)) expect(r.streams.has(key), `stream ${key}`).toBe(true);
      for (const [id, spec] of before.schedules)
        if (after.schedules.get(id) === spec) expect(r.schedules.get(id)).toBe(spec);
      expect([...r.schedules.keys()].sort()).toEqual([...after.schedules.keys()].sort());
      const blobs = await dumpBlobs(path.join(dirB, 'blobs'));
      expect(before.blobs.size).toBeGreaterThan(0);
      for (const [k, body] of before.blobs) expect(blobs.get(k)?.equals(body), `blob ${k}`).toBe(true);
      expect(
        (JSON.parse(await readFile(path.join(dirB, 'bootstrap.json'), 'utf8')) as { BOOTSTRAP_API_KEY: string })
          .BOOTSTRAP_API_KEY,
      ).toBe(a.key);
    } finally {
      await services.stop();
    }

    // The restored platform on other ports: the same key works, and no run stays stuck — each one
    // open at the backup completes or ends failed with its reason.
    const b = await up(await upEnv(dirB, { RECONCILE_RUNS_GRACE_S: '5' }));
    expect(b.api).not.toBe(a.api);
    expect(b.key).toBe(a.key);
    const clientB = makeClient(b.api);
    expect((await clientB.get(`/v1/neurons/${neuronId}`, b.key, { 'x-brain-id': b.brainId })).status).toBe(200);
    expect(openAtBackup.length).toBeGreaterThan(0);
    const settleBy = Date.now() + 150_000;
    const ended = new Map<string, { status: string; failedReason?: string }>();
    while (ended.size < openAtBackup.length && Date.now() < settleBy) {
      for (const id of openAtBackup) {
        if (ended.has(id)) continue;
        const job = (await clientB.get(`/v1/jobs/${id}`, b.key)).body as {
          status: string;
          failedReason?: string;
        };
        if (job.status === 'completed' || job.status === 'failed') ended.set(id, job);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const stuck = openAtBackup.filter((id) => !ended.has(id));
    if (stuck.length) {
      // What a stuck run looks like, for the failure message: its job, its workflow, the reconcile's line.
      const connection = await Connection.connect({ address: b.temporalAddress });
      for (const id of stuck) {
        console.log('[backup-restore] stuck job', JSON.stringify((await clientB.get(`/v1/jobs/${id}`, b.key)).body));
        const d = await new Client({ connection }).workflow
          .getHandle(id)
          .describe()
          .catch((e: unknown) => String(e));
        console.log(
          '[backup-restore] its workflow',
          typeof d === 'string' ? d : JSON.stringify(d.raw.pendingActivities),
          typeof d === 'string' ? '' : d.status.name,
        );
      }
      await connection.close();
      console.log(b.proc.lines.filter((l) => /reconcile|start sweep/.test(l)).join('\n'));
    }
    expect(stuck, `runs still open 150 s after the restored start: ${stuck.join(', ')}`).toEqual([]);
    for (const job of ended.values()) if (job.status === 'failed') expect(job.failedReason).toBeTruthy();
    const summary = [...ended.values()].reduce<Record<string, number>>(
      (acc, j) => ({ ...acc, [j.status]: (acc[j.status] ?? 0) + 1 }),
      {},
    );
    console.log(`[backup-restore] ${openAtBackup.length} runs open at the backup ended as ${JSON.stringify(summary)}`);
    console.log(backup.lines.filter((l) => l.startsWith('[backup]')).join('\n'));
    console.log(b.proc.lines.filter((l) => /runs reconciled at start/.test(l)).join('\n'));

    b.proc.child.kill('SIGINT');
    expect(await Promise.race([b.proc.exited, new Promise((r) => setTimeout(() => r('timeout'), 60_000))])).toBe(0);
  }, 600_000);
});
