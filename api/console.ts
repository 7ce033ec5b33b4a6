import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { PAGE_HEADERS, pageCsp } from './pages.js';

/**
 * The console (docs/console.md): a single-page app built by Vite from console/src into console/dist
 * (`npm run build`, or provisioning when the build is missing or older than its sources), served
 * here at /console from the same origin as the API it calls. Hashed files under /console/assets are
 * cached for a year; every other path under /console answers index.html, so a reload on a client
 * route (/console/runs/<id>) works. The page's CSP is the share page's (pageCsp), with data: images
 * for the inline favicon. Files are gzipped once in memory when the client accepts it.
 */
const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../console/dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
const HEADERS = { 'Content-Security-Policy': pageCsp({ 'img-src': 'data:' }), ...PAGE_HEADERS };
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** A file name under console/dist or console/dist/assets: no separators, no leading dot. */
const SAFE_NAME = /^[\w-][\w.-]*$/;

interface Loaded {
  mtimeMs: number;
  body: Buffer;
  gz: Buffer | null;
}
const cache = new Map<string, Loaded>();

/** The file as built (reloaded when a new build replaced it), or null when it is not there. */
async function load(file: string): Promise<Loaded | null> {
  const st = await stat(file).catch(() => null);
  if (!st?.isFile()) return null;
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === st.mtimeMs) return hit;
  const body = await readFile(file);
  // Text compresses; an image already is.
  const gz = /\.(html|js|css|svg|json|txt)$/.test(file) && body.length > 512 ? gzipSync(body, { level: 9 }) : null;
  const loaded = { mtimeMs: st.mtimeMs, body, gz };
  cache.set(file, loaded);
  return loaded;
}

function send(ctx: Context, file: Loaded, type: string, cacheControl: string): void {
  ctx.set({ ...HEADERS, 'Cache-Control': cacheControl, Vary: 'Accept-Encoding' });
  ctx.type = type;
  if (file.gz && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
    ctx.set('Content-Encoding', 'gzip');
    ctx.body = file.gz;
  } else ctx.body = file.body;
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The console is not built</h1>
<p>Its assets are missing from <code>console/dist</code>. Build them with <code>npm run build</code>
(or <code>npm run console:build</code> for the console alone); <code>npm run up</code> builds them when they are missing.</p>
</body></html>`;

async function index(ctx: Context, dir: string): Promise<void> {
  const html = await load(path.join(dir, 'index.html'));
  if (!html) {
    ctx.status = 503;
    ctx.set({ ...HEADERS, 'Cache-Control': 'no-store', 'Retry-After': '30' });
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = NOT_BUILT;
    return;
  }
  // Always revalidated: a new build changes the hashed names it points to.
  send(ctx, html, TYPES['.html'], 'no-cache');
}

/** Mounts the console's routes; `dir` is the built output (default console/dist; tests pass another). */
export function mountConsole(router: Router, dir: string = DIST): void {
  router.get('/console', (ctx) => index(ctx, dir));
  router.get('/console/assets/:name', async (ctx) => {
    const name = ctx.params.name;
    const file = SAFE_NAME.test(name) ? await load(path.join(dir, 'assets', name)) : null;
    if (!file) return; // 404 from the router's fallthrough
    send(ctx, file, TYPES[path.extname(name)] ?? 'application/octet-stream', IMMUTABLE);
  });
  router.get('/console/*rest', async (ctx) => {
    // A top-level file of the build (not index.html) when one exists, else a client route.
    const rest = String(ctx.params.rest);
    if (SAFE_NAME.test(rest) && rest !== 'index.html' && path.extname(rest)) {
      const file = await load(path.join(dir, rest));
      if (file) return send(ctx, file, TYPES[path.extname(rest)] ?? 'application/octet-stream', 'public, max-age=3600');
      return; // a missing file is a 404, not the app
    }
    await index(ctx, dir);
  });
}
