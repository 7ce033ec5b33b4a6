/**
 * `npm run restore -- <file>`: brings a backup of `npm run backup` (scripts/backup-format.ts) back
 * into an EMPTY data folder (DATA_DIR, default `.data`); `npm run up` on that folder then starts the
 * platform on it (docs/operations.md, "Backup and restore").
 *
 * What it checks before it writes anything into the folder: the folder is missing or empty (a
 * restore never mixes with live data), the archive's checksum against `<file>.sha256` when that
 * file is beside it, the manifest's format, every part's size and SHA-256, that the archive holds
 * no file the manifest does not list, and SQLite's `quick_check` on each database. The parts are
 * unpacked into a staging folder beside the target and moved into it only when all of that passed.
 *
 * What the restored platform does at its first start: FerretDB and Temporal open their databases;
 * Redis loads the snapshot (redis/dump.rdb) and turns its append-only file on (scripts/embedded.ts);
 * the API reconciles runs that were in flight (src/reconcile) and receptor schedules.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FORMAT, FORMAT_VERSION, hashFile, type Manifest, run, size, SQLITE3 } from './backup-format.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const say = (line: string): void => void process.stderr.write(`[restore] ${line}\n`);

async function walk(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const child = path.join(rel, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(dir, child)));
    else out.push(child);
  }
  return out;
}

export async function restore(file: string, dataDir: string): Promise<Manifest> {
  const archive = path.resolve(file);
  if (!existsSync(archive)) throw new Error(`no archive at ${archive}`);
  if (existsSync(dataDir) && (await readdir(dataDir)).length > 0)
    throw new Error(
      `${dataDir} is not empty: a restore goes into an empty data folder (DATA_DIR); nothing was changed`,
    );

  const sumFile = `${archive}.sha256`;
  if (existsSync(sumFile)) {
    const want = (await readFile(sumFile, 'utf8')).trim().split(/\s+/)[0];
    const { sha256, bytes } = await hashFile(archive);
    if (sha256 !== want)
      throw new Error(`archive checksum mismatch: ${sha256} where ${path.basename(sumFile)} says ${want}`);
    say(`archive: ${archive} (${size(bytes)}), sha256 matches ${path.basename(sumFile)}`);
  } else say(`archive: ${archive}; no ${path.basename(sumFile)} beside it, so only the parts' checksums are checked`);

  const parent = path.dirname(dataDir);
  await mkdir(parent, { recursive: true });
  const stage = await mkdtemp(path.join(parent, `.${path.basename(dataDir)}.restore-`));
  try {
    await run('tar', ['-xzf', archive, '-C', stage, '--no-same-owner'], { timeoutMs: 60 * 60_000 });
    const manifestFile = path.join(stage, 'manifest.json');
    if (!existsSync(manifestFile)) throw new Error('the archive has no manifest.json: not a backup of npm run backup');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as Manifest;
    if (manifest.format !== FORMAT)
      throw new Error(`the archive's format is ${String(manifest.format)}, not ${FORMAT}`);
    if (manifest.version > FORMAT_VERSION)
      throw new Error(
        `the archive's format version ${manifest.version} is newer than this code reads (${FORMAT_VERSION})`,
      );
    say(
      `manifest: backup of ${manifest.startedAt} … ${manifest.finishedAt}, ${manifest.parts.length} parts (${manifest.order.join(', ')})`,
    );

    const listed = new Set(manifest.parts.map((p) => p.path));
    for (const rel of await walk(stage)) {
      const key = rel.split(path.sep).join('/');
      if (key !== 'manifest.json' && !listed.has(key))
        throw new Error(`the archive holds ${key}, which its manifest does not list`);
    }
    for (const part of manifest.parts) {
      if (part.path.split('/').includes('..') || path.isAbsolute(part.path))
        throw new Error(`bad part path ${part.path}`);
      const at = path.join(stage, part.path);
      if (!existsSync(at)) throw new Error(`part ${part.path} is missing from the archive`);
      const { sha256, bytes } = await hashFile(at);
      if (sha256 !== part.sha256 || bytes !== part.bytes)
        throw new Error(`part ${part.path} does not match its checksum`);
    }
    say(`parts: all ${manifest.parts.length} match their SHA-256`);
    for (const part of manifest.parts.filter((p) => p.path.endsWith('.sqlite') || p.path.endsWith('.db'))) {
      const ok = (await run(SQLITE3, [path.join(stage, part.path), 'PRAGMA quick_check;'])).trim();
      if (ok !== 'ok') throw new Error(`${part.path}: SQLite quick_check says ${ok.split('\n')[0]}`);
    }
    say('sqlite: quick_check ok on every database');

    await rm(manifestFile);
    await mkdir(dataDir, { recursive: true });
    for (const entry of await readdir(stage)) await rename(path.join(stage, entry), path.join(dataDir, entry));
    if (existsSync(path.join(dataDir, 'bootstrap.json'))) await chmod(path.join(dataDir, 'bootstrap.json'), 0o600);
    for (const folder of ['mongo', 'redis', 'temporal']) await mkdir(path.join(dataDir, folder), { recursive: true });
    say(`restored into ${dataDir}; start it with \`DATA_DIR=${dataDir} npm run up\``);
    return manifest;
  } finally {
    await rm(stage, { recursive: true, force: true });
    await rmdir(stage).catch(() => undefined);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file || process.argv.length > 3) {
    console.error('usage: npm run restore -- <file>   (into DATA_DIR, default .data, which must be empty)');
    process.exit(2);
  }
  const dataDir = path.resolve(ROOT, process.env.DATA_DIR ?? '.data');
  restore(file, dataDir).then(
    () => undefined,
    (e: unknown) => {
      say(`failed: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
