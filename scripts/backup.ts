/**
 * `npm run backup -- <file>`: an online, consistent backup of the embedded deployment (`npm run up`)
 * while it serves (docs/operations.md, "Backup and restore"; the archive: scripts/backup-format.ts).
 *
 * Why each copy is consistent although nothing stops:
 * - FerretDB's and Temporal's SQLite files are in WAL mode; `VACUUM INTO` (through Debian's `sqlite3`
 *   CLI) copies a database inside one read transaction, so it sees one committed state while writers
 *   go on (a reader never blocks a WAL writer). Copying the files would tear them (the WAL and the
 *   main file at different moments). The online backup API (`.backup`) restarts each time another
 *   connection writes between its steps and may never finish under load; `VACUUM INTO` does not.
 * - Redis: `redis-cli --rdb` asks the running server for a snapshot (a fork, as for a replica), so
 *   the running server's files are not touched and its AOF goes on.
 * - Blobs are written to a temporary name and renamed when complete, so every finished file is whole.
 *
 * Across services the copies are taken moments apart, in an order chosen so that what one copy may
 * miss the start-up reconcile (src/reconcile) repairs: Temporal first, then the store (a run stored
 * after Temporal's copy has no workflow: it is started again from its stored start, or fails with a
 * reason), then Redis (its streams are at least as new as the store's jobs), then the blobs (every
 * blob a stored record names was written before the record), then the bootstrap file.
 *
 * Environment: DATA_DIR (default `.data`, as for `npm run up`). Progress: one line per step on stderr.
 * Exit code 0 with the archive and `<file>.sha256` written; 1 with nothing written on failure.
 */
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FORMAT, FORMAT_VERSION, hashFile, type Manifest, type Part, run, size, SQLITE3 } from './backup-format.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const say = (line: string): void => void process.stderr.write(`[backup] ${line}\n`);

/**
 * The port of the redis-server serving `dir`, from /proc: scripts/embedded.ts starts it with that
 * folder as its working directory (and `--dir`). Redis rewrites its command line to
 * `redis-server 127.0.0.1:<port>`, so the port is read from there (or from `--port`).
 */
export function runningRedisPort(dir: string): number | undefined {
  if (!existsSync('/proc')) return undefined;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let argv: string[];
    let cwd: string;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (!path.basename(argv[0]?.split(' ')[0] ?? '').startsWith('redis-server')) continue;
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue;
    }
    const flag = argv.indexOf('--dir');
    if (path.resolve(flag >= 0 ? argv[flag + 1]! : cwd) !== dir) continue;
    const portFlag = argv.indexOf('--port');
    const port = portFlag >= 0 ? argv[portFlag + 1] : /:(\d+)/.exec(argv[0]!)?.[1];
    if (port) return Number(port);
  }
  return undefined;
}

/** Every file under `dir`, as paths relative to it. */
async function walk(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const child = path.join(rel, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(dir, child)));
    else if (entry.isFile()) out.push(child);
  }
  return out;
}

/** `VACUUM INTO` of one SQLite database (a consistent copy while it is written to). */
async function vacuumInto(src: string, dst: string): Promise<void> {
  await mkdir(path.dirname(dst), { recursive: true });
  const quoted = dst.replace(/'/g, "''");
  await run(SQLITE3, ['-bail', '-cmd', '.timeout 30000', src, `VACUUM INTO '${quoted}'`], { timeoutMs: 30 * 60_000 });
}

export async function backup(dataDir: string, file: string): Promise<{ manifest: Manifest; sha256: string }> {
  if (!existsSync(dataDir)) throw new Error(`no data folder at ${dataDir} (DATA_DIR)`);
  const storeChoice = path.join(dataDir, 'store.json');
  if (
    existsSync(storeChoice) &&
    (JSON.parse(readFileSync(storeChoice, 'utf8')) as { handler?: string }).handler === 'postgresql'
  )
    throw new Error('this data folder keeps FerretDB data in PostgreSQL: back it up with pg_dump (docs/operations.md)');
  try {
    await run(SQLITE3, ['-version']);
  } catch {
    throw new Error("sqlite3 not found; run `npm run provision` (it installs Debian's sqlite3 when missing)");
  }
  const out = path.resolve(file);
  await mkdir(path.dirname(out), { recursive: true });
  const stage = await mkdtemp(path.join(path.dirname(out), `.${path.basename(out)}.stage-`));
  const startedAt = new Date();
  const order: string[] = [];
  try {
    // 1. Temporal.
    const temporalDb = path.join(dataDir, 'temporal', 'temporal.db');
    if (existsSync(temporalDb)) {
      const t = Date.now();
      await vacuumInto(temporalDb, path.join(stage, 'temporal', 'temporal.db'));
      const { size: bytes } = await stat(path.join(stage, 'temporal', 'temporal.db'));
      say(`temporal: VACUUM INTO of temporal/temporal.db (${size(bytes)}, ${Date.now() - t} ms)`);
      order.push('temporal');
    } else say('temporal: no temporal/temporal.db (external Temporal?): skipped');

    // 2. The store (one SQLite file per FerretDB database).
    const mongoDir = path.join(dataDir, 'mongo');
    const dbs = existsSync(mongoDir) ? (await readdir(mongoDir)).filter((f) => f.endsWith('.sqlite')) : [];
    for (const name of dbs) {
      const t = Date.now();
      await vacuumInto(path.join(mongoDir, name), path.join(stage, 'mongo', name));
      const { size: bytes } = await stat(path.join(stage, 'mongo', name));
      say(`store: VACUUM INTO of mongo/${name} (${size(bytes)}, ${Date.now() - t} ms)`);
    }
    if (dbs.length) order.push('store');
    else say('store: no FerretDB SQLite files under mongo/ (external MongoDB?): skipped');
    for (const extra of ['state.json']) {
      if (existsSync(path.join(mongoDir, extra)))
        await copyFile(path.join(mongoDir, extra), path.join(stage, 'mongo', extra));
    }
    if (existsSync(storeChoice)) await copyFile(storeChoice, path.join(stage, 'store.json'));

    // 3. Redis.
    const redisDir = path.join(dataDir, 'redis');
    const port = existsSync(redisDir) ? runningRedisPort(redisDir) : undefined;
    await mkdir(path.join(stage, 'redis'), { recursive: true });
    if (port) {
      const t = Date.now();
      await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), '--rdb', path.join(stage, 'redis', 'dump.rdb')], {
        timeoutMs: 30 * 60_000,
      });
      const { size: bytes } = await stat(path.join(stage, 'redis', 'dump.rdb'));
      say(
        `redis: snapshot of the running server on port ${port} (redis-cli --rdb, ${size(bytes)}, ${Date.now() - t} ms)`,
      );
      order.push('redis');
    } else if (existsSync(redisDir)) {
      // No server on the folder: its files are at rest and copied as they are.
      for (const rel of await walk(redisDir)) {
        if (!/^(dump\.rdb|appendonlydir[/\\].+)$/.test(rel)) continue;
        await mkdir(path.dirname(path.join(stage, 'redis', rel)), { recursive: true });
        await copyFile(path.join(redisDir, rel), path.join(stage, 'redis', rel));
      }
      say('redis: no server runs on redis/: its files copied as they are');
      order.push('redis');
    } else say('redis: no redis/ folder (external Redis?): skipped');

    // 4. Blobs.
    const blobDir = path.join(dataDir, 'blobs');
    if (existsSync(blobDir)) {
      const t = Date.now();
      let n = 0;
      let bytes = 0;
      for (const rel of await walk(blobDir)) {
        if (rel.endsWith('.part')) continue; // an upload in progress: not yet named by any record
        const dst = path.join(stage, 'blobs', rel);
        await mkdir(path.dirname(dst), { recursive: true });
        try {
          await copyFile(path.join(blobDir, rel), dst);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // deleted meanwhile
          throw e;
        }
        n++;
        bytes += (await stat(dst)).size;
      }
      say(`blobs: ${n} files (${size(bytes)}, ${Date.now() - t} ms)`);
      order.push('blobs');
    } else say('blobs: no blobs/ folder: none');

    // 5. The bootstrap identity.
    const bootstrapFile = path.join(dataDir, 'bootstrap.json');
    if (existsSync(bootstrapFile)) {
      await copyFile(bootstrapFile, path.join(stage, 'bootstrap.json'));
      say('bootstrap: bootstrap.json');
      order.push('bootstrap');
    }

    // The manifest: every part with its checksum.
    const parts: Part[] = [];
    for (const rel of (await walk(stage)).sort()) {
      const { sha256, bytes } = await hashFile(path.join(stage, rel));
      parts.push({ path: rel.split(path.sep).join('/'), bytes, sha256 });
    }
    const manifest: Manifest = {
      format: FORMAT,
      version: FORMAT_VERSION,
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      dataDir,
      order,
      parts,
    };
    await writeFile(path.join(stage, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    say(`manifest: ${parts.length} parts, each with its SHA-256`);

    // The archive, written under a temporary name and renamed when complete.
    const t = Date.now();
    const tmp = `${out}.partial`;
    await run('tar', ['-czf', tmp, '-C', stage, '.'], { timeoutMs: 60 * 60_000 });
    const { sha256, bytes } = await hashFile(tmp);
    await rename(tmp, out);
    await writeFile(`${out}.sha256`, `${sha256}  ${path.basename(out)}\n`);
    say(`archive: ${out} (${size(bytes)}, ${Date.now() - t} ms), sha256 ${sha256} (in ${path.basename(out)}.sha256)`);
    return { manifest, sha256 };
  } finally {
    await rm(stage, { recursive: true, force: true });
    await rm(`${out}.partial`, { force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file || process.argv.length > 3) {
    console.error('usage: npm run backup -- <file>   (DATA_DIR names the data folder; default .data)');
    process.exit(2);
  }
  const dataDir = path.resolve(ROOT, process.env.DATA_DIR ?? '.data');
  const t = Date.now();
  say(`backing up ${dataDir} while it serves`);
  backup(dataDir, file).then(
    () => say(`done in ${((Date.now() - t) / 1000).toFixed(1)} s`),
    (e: unknown) => {
      say(`failed: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
