import busboy from 'busboy';
import type { Context } from 'koa';
import { payloadTooLarge, unsupportedMediaType, validationError } from '../src/errors.js';

export interface UploadedFile { name: string; contentType: string; data: Buffer }

/**
 * Reads the one file of a multipart/form-data request (field `file`), at most `maxBytes`:
 * 415 for another content type, 413 beyond the size, 400 without a file. The declared type is
 * checked against the allowed list; the bytes are kept in memory (uploads here are small).
 */
export function readOneFile(ctx: Context, opts: { maxBytes: number; allowed: (type: string) => boolean }): Promise<UploadedFile> {
  if (!ctx.is('multipart/form-data')) throw unsupportedMediaType('multipart/form-data with a file field');
  return new Promise((resolve, reject) => {
    let file: UploadedFile | null = null;
    let failed: Error | null = null;
    const bb = busboy({ headers: ctx.req.headers, limits: { files: 1, fileSize: opts.maxBytes, fields: 10 } });
    bb.on('file', (_field, stream, info) => {
      const chunks: Buffer[] = [];
      if (!opts.allowed(info.mimeType)) {
        failed = unsupportedMediaType(`an allowed file type (got ${info.mimeType})`);
        stream.resume();
        return;
      }
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => { failed = payloadTooLarge(`files are limited to ${opts.maxBytes} bytes`); });
      stream.on('end', () => {
        if (!failed) file = { name: (info.filename || 'upload').slice(0, 200), contentType: info.mimeType, data: Buffer.concat(chunks) };
      });
    });
    bb.on('error', (e: Error) => reject(validationError(`malformed multipart body: ${e.message}`)));
    bb.on('close', () => {
      if (failed) reject(failed);
      else if (!file) reject(validationError('send one file in the field "file"'));
      else resolve(file);
    });
    ctx.req.pipe(bb);
  });
}
