import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type * as S3Storage from '@aws-sdk/lib-storage';
import type { Config } from '../kernel/config.js';
import { payloadTooLarge } from '../kernel/errors.js';
import { isMediaType } from '../kernel/schemas.js';

/** What a stored body turned out to be, counted as it streamed through. */
export interface StoredBlob {
  key: string;
  size: number;
  sha256: string;
  head: Buffer;
}

/**
 * The one interface over blob bodies (asset files, extracted text, audio). Bodies stream in and
 * out; nothing here holds a whole body in memory. `put` fails with 413 once more than
 * `maxBytes` arrived and leaves nothing behind.
 */
export interface BlobStore {
  readonly kind: 'fs' | 's3';
  put(key: string, body: Readable, opts: { contentType?: string; maxBytes: number }): Promise<StoredBlob>;
  get(key: string): Promise<Readable>;
  /** The whole body, at most `maxBytes` (for extraction); larger bodies fail. */
  read(key: string, maxBytes: number): Promise<Buffer>;
  delete(key: string): Promise<void>;
  /** Deletes every body whose key starts with `prefix` (a folder: it ends with `/`); returns how many went. */
  deletePrefix(prefix: string): Promise<number>;
}

/** Bytes kept from the start of a body for content sniffing. */
const HEAD_BYTES = 4100;

/** Counts, hashes and caps a stream as it passes; keeps the first bytes for sniffing. */
class Meter extends Transform {
  size = 0;
  private readonly hash = createHash('sha256');
  private headParts: Buffer[] = [];
  private headLen = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      cb(payloadTooLarge(`bodies are limited to ${this.maxBytes} bytes`));
      return;
    }
    this.hash.update(chunk);
    if (this.headLen < HEAD_BYTES) {
      this.headParts.push(chunk.subarray(0, HEAD_BYTES - this.headLen));
      this.headLen += Math.min(chunk.length, HEAD_BYTES - this.headLen);
    }
    cb(null, chunk);
  }
  result(key: string): StoredBlob {
    return { key, size: this.size, sha256: this.hash.digest('hex'), head: Buffer.concat(this.headParts) };
  }
}

async function collect(stream: Readable, maxBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of stream) {
    n += (c as Buffer).length;
    if (n > maxBytes) {
      stream.destroy();
      throw payloadTooLarge(`the body is larger than ${maxBytes} bytes`);
    }
    parts.push(c as Buffer);
  }
  return Buffer.concat(parts);
}

const safeKey = (key: string): string => {
  if (!/^[\w./-]+$/.test(key) || key.split('/').some((p) => p === '..' || p === '.' || p === ''))
    throw new Error(`invalid blob key ${key}`);
  return key;
};

/** Bodies as files under a folder (the default: `<DATA_DIR>/blobs`); written to a temp name, renamed when complete. */
function createFsBlobStore(root: string): BlobStore {
  const file = (key: string) => path.join(root, safeKey(key));
  return {
    kind: 'fs',
    async put(key, body, { maxBytes }) {
      const target = file(key);
      await mkdir(path.dirname(target), { recursive: true });
      const tmp = `${target}.${process.pid}.${Date.now()}.part`;
      const meter = new Meter(maxBytes);
      try {
        await pipeline(body, meter, createWriteStream(tmp));
        await rename(tmp, target);
      } catch (e) {
        body.resume();
        await rm(tmp, { force: true });
        throw e;
      }
      return meter.result(key);
    },
    async get(key) {
      await stat(file(key));
      return createReadStream(file(key));
    },
    async read(key, maxBytes) {
      return collect(await this.get(key), maxBytes);
    },
    async delete(key) {
      await rm(file(key), { force: true });
    },
    async deletePrefix(prefix) {
      if (!prefix.endsWith('/')) throw new Error(`blob prefix ${prefix} is not a folder`);
      const dir = file(prefix.slice(0, -1));
      const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
      await rm(dir, { recursive: true, force: true });
      return entries.filter((e) => e.isFile()).length;
    },
  };
}

export interface S3Options {
  endpoint?: string;
  region: string;
  bucket: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
}

/**
 * Bodies in any S3-compatible object store (AWS SDK v3). Uploads stream in parts
 * (@aws-sdk/lib-storage), so a large body never sits in memory whole; an upload stopped by the
 * size cap is aborted and leaves no object. The SDK is loaded at the first call: a process on the
 * file store never holds it (about 20 MB of resident memory, docs/decisions.md).
 */
export function createS3BlobStore(o: S3Options): BlobStore & { ensureBucket(): Promise<void> } {
  let loading: Promise<{ s3: S3Sdk.S3Client; sdk: typeof S3Sdk; Upload: typeof S3Storage.Upload }> | undefined;
  const load = () =>
    (loading ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]).then(([sdk, storage]) => ({
      sdk,
      Upload: storage.Upload,
      s3: new sdk.S3Client({
        region: o.region,
        endpoint: o.endpoint,
        forcePathStyle: o.forcePathStyle,
        credentials:
          o.accessKeyId && o.secretAccessKey
            ? { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey }
            : undefined,
      }),
    })));
  return {
    kind: 's3',
    async ensureBucket() {
      const { s3, sdk } = await load();
      try {
        await s3.send(new sdk.HeadBucketCommand({ Bucket: o.bucket }));
      } catch {
        await s3.send(new sdk.CreateBucketCommand({ Bucket: o.bucket }));
      }
    },
    async put(key, body, { contentType, maxBytes }) {
      const { s3, sdk, Upload } = await load();
      const meter = new Meter(maxBytes);
      const pass = new PassThrough();
      const upload = new Upload({
        client: s3,
        // A declared type that is not a valid media type (an upload's or a fetched answer's) is not sent on.
        params: {
          Bucket: o.bucket,
          Key: safeKey(key),
          Body: pass,
          ContentType: contentType && isMediaType(contentType) ? contentType : undefined,
        },
        queueSize: 2,
        partSize: 5 * 1024 * 1024,
      });
      const piping = pipeline(body, meter, pass);
      try {
        await Promise.all([piping, upload.done()]);
      } catch (e) {
        body.resume();
        // Silent on purpose: the upload's own error is thrown just below; S3 failing here too adds nothing to it.
        await upload.abort().catch(() => undefined);
        await s3.send(new sdk.DeleteObjectCommand({ Bucket: o.bucket, Key: safeKey(key) })).catch(() => undefined);
        // The cap's 413 wins over the abort error it caused.
        throw await piping.then(
          () => e,
          (pipeErr: unknown) => pipeErr,
        );
      }
      return meter.result(key);
    },
    async get(key) {
      const { s3, sdk } = await load();
      const out = await s3.send(new sdk.GetObjectCommand({ Bucket: o.bucket, Key: safeKey(key) }));
      return out.Body as Readable;
    },
    async read(key, maxBytes) {
      return collect(await this.get(key), maxBytes);
    },
    async delete(key) {
      const { s3, sdk } = await load();
      await s3.send(new sdk.DeleteObjectCommand({ Bucket: o.bucket, Key: safeKey(key) }));
    },
    async deletePrefix(prefix) {
      if (!prefix.endsWith('/')) throw new Error(`blob prefix ${prefix} is not a folder`);
      safeKey(prefix.slice(0, -1));
      const { s3, sdk } = await load();
      let n = 0;
      // A page of at most 1,000 keys at a time, each deleted in one request, until none is left.
      for (;;) {
        const page = await s3.send(new sdk.ListObjectsV2Command({ Bucket: o.bucket, Prefix: prefix, MaxKeys: 1000 }));
        const keys = (page.Contents ?? []).flatMap((c) => (c.Key ? [{ Key: c.Key }] : []));
        if (!keys.length) return n;
        await s3.send(new sdk.DeleteObjectsCommand({ Bucket: o.bucket, Delete: { Objects: keys, Quiet: true } }));
        n += keys.length;
      }
    },
  };
}

/** The configured store: BLOB_STORE=s3 with S3_* settings, else files under DATA_DIR/blobs. */
export function createBlobStore(c: Config): BlobStore {
  if (c.BLOB_STORE === 's3') {
    if (!c.S3_BUCKET) throw new Error('BLOB_STORE=s3 needs S3_BUCKET');
    return createS3BlobStore({
      endpoint: c.S3_ENDPOINT,
      region: c.S3_REGION,
      bucket: c.S3_BUCKET,
      accessKeyId: c.S3_ACCESS_KEY_ID,
      secretAccessKey: c.S3_SECRET_ACCESS_KEY,
      forcePathStyle: c.S3_FORCE_PATH_STYLE,
    });
  }
  return createFsBlobStore(path.resolve(c.DATA_DIR, 'blobs'));
}

/** A body held in memory as a stream (small text bodies). */
export const fromBuffer = (b: Buffer): Readable => Readable.from([b]);
