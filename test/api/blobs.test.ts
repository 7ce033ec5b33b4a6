import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDir, freePorts } from '../../scripts/embedded.js';
import { createS3BlobStore, type BlobStore } from '../../src/blobs/store.js';
import { AssetWithJob, ChunkList } from '../../src/knowledge/index.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * The S3 path of the blob store against a real S3-compatible server on loopback: Versity Gateway
 * (posix backend), built by scripts/provision.sh. The same bodies go through the API with
 * BLOB_STORE=s3 and come back as chunks.
 */
const BIN = path.join(cacheDir(), 'bin', 'versitygw');
const KEY = 'cortexTestAccess';
const SECRET = 'cortexTestSecret0123456789';
let gw: ChildProcess | undefined;
let endpoint = '';
let root = '';

beforeAll(async () => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run bash scripts/provision.sh (it builds Versity Gateway)`);
  root = await mkdtemp(path.join(os.tmpdir(), 'cortex-s3-'));
  const [port] = await freePorts(1);
  endpoint = `http://127.0.0.1:${port}`;
  gw = spawn(BIN, ['--access', KEY, '--secret', SECRET, '--port', `127.0.0.1:${port}`, 'posix', root], {
    stdio: 'ignore',
  });
  const until = Date.now() + 20_000;
  for (;;) {
    const up = await fetch(endpoint).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > until) throw new Error('versitygw did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}, 30_000);
afterAll(async () => {
  gw?.kill('SIGTERM');
  await rm(root, { recursive: true, force: true });
});

const store = (bucket: string) =>
  createS3BlobStore({
    endpoint,
    region: 'us-east-1',
    bucket,
    accessKeyId: KEY,
    secretAccessKey: SECRET,
    forcePathStyle: true,
  });
const text = async (b: BlobStore, key: string) => (await b.read(key, 1 << 20)).toString('utf8');

describe('blob store on S3 (Versity Gateway)', () => {
  it('puts in parts, reads back, hashes and sniffs the head, refuses a body over the cap without leaving an object, deletes', async () => {
    const s = store('cortex-unit');
    await s.ensureBucket();
    await s.ensureBucket();
    // 12 MiB in 64 KiB pieces: three multipart parts of 5 MiB.
    const piece = Buffer.alloc(64 * 1024, 'a');
    const big = await s.put(
      'w/big',
      Readable.from(
        (function* () {
          for (let i = 0; i < 192; i++) yield piece;
        })(),
      ),
      { maxBytes: 20 * 1024 * 1024 },
    );
    expect(big.size).toBe(12 * 1024 * 1024);
    expect(big.head.length).toBe(4100);
    const small = await s.put('w/small', Readable.from([Buffer.from('hello s3')]), {
      maxBytes: 100,
      contentType: 'text/plain',
    });
    expect(small).toMatchObject({ size: 8, sha256: createHash('sha256').update('hello s3').digest('hex') });
    expect(await text(s, 'w/small')).toBe('hello s3');
    await expect(s.put('w/over', Readable.from([Buffer.alloc(300)]), { maxBytes: 100 })).rejects.toMatchObject({
      status: 413,
    });
    await expect(s.get('w/over')).rejects.toBeTruthy();
    await s.delete('w/small');
    await expect(s.get('w/small')).rejects.toBeTruthy();
    // Nothing of the refused body on disk either (the posix backend's files are the objects).
    expect(await readdir(path.join(root, 'cortex-unit', 'w'))).toEqual(['big']);
  });

  it('the API with BLOB_STORE=s3: an uploaded body lands in the bucket and its ingest job reads it back into chunks', async () => {
    let p: TestPlatform | undefined;
    try {
      const bucket = 'cortex-api';
      await store(bucket).ensureBucket();
      p = await startPlatform(undefined, {
        BLOB_STORE: 's3',
        S3_ENDPOINT: endpoint,
        S3_BUCKET: bucket,
        S3_ACCESS_KEY_ID: KEY,
        S3_SECRET_ACCESS_KEY: SECRET,
        S3_FORCE_PATH_STYLE: true,
      });
      const app = p.app;
      const ws = await buildWorkspace(app);
      const form = new FormData();
      form.append(
        'file',
        new Blob(['# Tide tables\n\nHigh tide at 06:12, low tide at 12:30.'], { type: 'text/markdown' }),
        'tides.md',
      );
      const res = await fetch(`${app.url}/v1/assets/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.key}`, ...ws.brainHeaders },
        body: form,
      });
      expect(res.status).toBe(201);
      const { asset, job_id } = AssetWithJob.parse(await res.json());
      expect(asset.content_type).toBe('text/markdown');
      expect((await settleJob(app, ws.key, job_id!)).status).toBe('completed');
      expect(existsSync(path.join(root, bucket, 'assets', ws.workspaceId, asset.id))).toBe(true);
      const chunks = ChunkList.parse((await app.get(`/v1/assets/${asset.id}/chunks`, ws.key)).body);
      expect(chunks.chunks[0].text).toContain('High tide at 06:12');
      expect((await app.del(`/v1/assets/${asset.id}`, ws.key)).status).toBe(200);
      expect(existsSync(path.join(root, bucket, 'assets', ws.workspaceId, asset.id))).toBe(false);
    } finally {
      await p?.close();
    }
  });
});
