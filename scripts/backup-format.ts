/**
 * The backup archive of the embedded deployment (docs/operations.md, "Backup and restore"): what
 * `npm run backup` writes (scripts/backup.ts) and `npm run restore` reads (scripts/restore.ts).
 *
 * An archive is a gzipped tar (the system `tar`: the `tar` npm package is not a dependency) of
 *   manifest.json          this format, when and from where, and every part with its size and SHA-256
 *   mongo/<db>.sqlite      each FerretDB database, copied with SQLite's `VACUUM INTO` (one read transaction)
 *   mongo/state.json       FerretDB's state file, when present
 *   store.json             which FerretDB backend the data folder chose (scripts/up.ts)
 *   temporal/temporal.db   the Temporal dev server's database, `VACUUM INTO` as well
 *   redis/dump.rdb         a Redis snapshot (`redis-cli --rdb` from the running server), or, when no
 *                          server runs on the folder, its files as they are (appendonlydir/, dump.rdb)
 *   blobs/…                every finished blob body (files ending in `.part` are uploads in progress)
 *   bootstrap.json         the installation's generated identity (API key, workspace, brain, JWT secret)
 * and a file `<archive>.sha256` beside it, in `sha256sum` format, with the archive's own checksum.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

export const FORMAT = 'cortex-embedded-backup';
export const FORMAT_VERSION = 1;

/** One file of the archive. `path` is relative to the archive's root, with `/` separators. */
export interface Part {
  path: string;
  bytes: number;
  sha256: string;
}

export interface Manifest {
  format: typeof FORMAT;
  version: number;
  /** When the backup started and ended (ISO); the parts were taken in between, in `order`. */
  startedAt: string;
  finishedAt: string;
  /** The data folder backed up (for the operator's information only). */
  dataDir: string;
  /** The order the services were copied in, and why (docs/operations.md). */
  order: string[];
  parts: Part[];
}

/** SHA-256 (hex) and size of a file, streamed. */
export async function hashFile(file: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

/** Runs a program; resolves with its stdout, rejects with its stderr and exit status. */
export function run(cmd: string, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : undefined;
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`${cmd}: ${e.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else
        reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `code ${code}`}): ${err.trim() || out.trim()}`));
    });
  });
}

/** `sqlite3`, or an error that says how to get it (scripts/provision.sh installs it when missing). */
export const SQLITE3 = process.env.CORTEX_SQLITE3 ?? 'sqlite3';

/** A size for progress lines. */
export const size = (bytes: number): string =>
  bytes >= 1 << 20
    ? `${(bytes / (1 << 20)).toFixed(1)} MiB`
    : bytes >= 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${bytes} B`;
