import { PassThrough, type Readable } from 'node:stream';
import busboy from 'busboy';
import type { Context } from 'koa';
import { payloadTooLarge, unsupportedMediaType, validationError } from '../src/kernel/errors.js';
import { setOwn } from '../src/kernel/own.js';

export interface UploadedFile {
  name: string;
  contentType: string;
  data: Buffer;
}

/** Room for the multipart framing and form fields around a file of the size limit. */
const FRAMING_SLACK = 256 * 1024;

/**
 * Streams the one file of a multipart/form-data request (field `file`) to `onFile` as it arrives,
 * and collects the form fields (before or after the file). Nothing is held whole in memory: a
 * declared Content-Length beyond the limit is refused at once (413); otherwise the file is cut
 * at `maxBytes` + 1 and `onFile`'s sink reports the 413 while the rest of the request is drained.
 * The answer comes once the whole request has been read, so the connection stays usable.
 */
export function streamUpload<T>(
  ctx: Context,
  opts: { maxBytes: number; onFile: (stream: Readable, info: { filename: string; mimeType: string }) => Promise<T> },
): Promise<{ fields: Record<string, string>; file: T }> {
  if (!ctx.is('multipart/form-data'))
    throw unsupportedMediaType('multipart/form-data with a file field, or application/json');
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > opts.maxBytes + FRAMING_SLACK) {
    ctx.set('Connection', 'close');
    throw payloadTooLarge(`files are limited to ${opts.maxBytes} bytes (this request declares ${declared})`);
  }
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let pending: Promise<T> | null = null;
    const bb = busboy({
      headers: ctx.req.headers,
      limits: { files: 1, fileSize: opts.maxBytes + 1, fields: 30, fieldSize: 200_000 },
    });
    bb.on('field', (name, value) => setOwn(fields, name, value));
    bb.on('file', (field, stream, info) => {
      if (pending || field !== 'file') {
        stream.resume();
        return;
      }
      const tap = new PassThrough();
      stream.pipe(tap);
      pending = opts
        .onFile(tap, { filename: (info.filename || 'upload').slice(0, 300), mimeType: info.mimeType })
        .catch((e: unknown) => {
          // The sink stopped (the size cap): the rest of the file is read and dropped.
          stream.unpipe(tap);
          stream.resume();
          throw e;
        });
      pending.catch(() => undefined); // rejects the request on 'close' below: only no unhandled rejection meanwhile
    });
    bb.on('error', (e: Error) => reject(validationError(`malformed multipart body: ${e.message}`)));
    bb.on('close', () => {
      if (!pending) {
        reject(validationError('send one file in the field "file"'));
        return;
      }
      pending.then((file) => resolve({ fields, file }), reject);
    });
    ctx.req.pipe(bb);
  });
}

/** Reads the one (small) file of a multipart request into memory: share-link uploads (see streamUpload for large ones). */
export async function readOneFile(
  ctx: Context,
  opts: { maxBytes: number; allowed: (type: string) => boolean },
): Promise<UploadedFile> {
  const { file } = await streamUpload(ctx, {
    maxBytes: opts.maxBytes,
    onFile: async (stream, info) => {
      if (!opts.allowed(info.mimeType)) throw unsupportedMediaType(`an allowed file type (got ${info.mimeType})`);
      const chunks: Buffer[] = [];
      let n = 0;
      for await (const c of stream) {
        n += (c as Buffer).length;
        if (n > opts.maxBytes) throw payloadTooLarge(`files are limited to ${opts.maxBytes} bytes`);
        chunks.push(c as Buffer);
      }
      return { name: info.filename.slice(0, 200), contentType: info.mimeType, data: Buffer.concat(chunks) };
    },
  });
  return file;
}
