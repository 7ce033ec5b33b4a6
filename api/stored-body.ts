import type { Context } from 'koa';
import { isMediaType } from '../src/kernel/schemas.js';

/**
 * Serving a body a tenant stored (an artifact's raw body, and any later route that serves a stored
 * file): the one helper, so that what a browser does with it is decided in one place.
 *   - The stored content type is echoed only when it is a valid media type (src/kernel/schemas.ts
 *     MediaType); a row stored before that check (CR/LF, control characters) is served as
 *     application/octet-stream instead of failing with a 500.
 *   - Every such body carries `X-Content-Type-Options: nosniff` and
 *     `Content-Security-Policy: default-src 'none'; sandbox`: opened in a browser, it runs no script,
 *     loads nothing, and has an opaque origin (no cookies, no storage of the platform's origin).
 *   - Only types a browser shows as inert text or data (INLINE) are served inline; everything else
 *     (HTML, SVG, XML, XHTML, JavaScript, unknown types) is `Content-Disposition: attachment`.
 */
const STORED_BODY_CSP = "default-src 'none'; sandbox";
const FALLBACK_TYPE = 'application/octet-stream';

/** Media types (essence, lowercase) served inline: a browser renders none of them as a document with script. */
const INLINE = new Set([
  'text/plain',
  'text/markdown',
  'text/x-markdown',
  'text/csv',
  'application/json',
  'application/yaml',
  'application/x-yaml',
  'text/yaml',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
]);

/** The essence (type/subtype, lowercase) of a stored content type, or the fallback when it is not a valid one. */
function storedEssence(stored: string | null | undefined): string {
  if (!stored || !isMediaType(stored)) return FALLBACK_TYPE;
  return stored.split(';')[0].trim().toLowerCase();
}

/**
 * Writes a stored body to the response with the headers above. `charset` is added for text bodies
 * kept as UTF-8 (artifacts); `filename` names the attachment.
 */
export function sendStoredBody(
  ctx: Context,
  body: string | Buffer,
  opts: { contentType: string | null | undefined; charset?: 'utf-8'; filename?: string },
): void {
  const essence = storedEssence(opts.contentType);
  ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': STORED_BODY_CSP });
  // ctx.attachment() sets the type from the file name's extension: the stored type is set after it.
  if (!INLINE.has(essence)) ctx.attachment(opts.filename);
  ctx.type = opts.charset && essence !== FALLBACK_TYPE ? `${essence}; charset=${opts.charset}` : essence;
  ctx.status = 200;
  ctx.body = body;
}
