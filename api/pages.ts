import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Router from '@koa/router';

/**
 * The two pages a person without an account uses (docs/shares.md): the share page
 * (`/share/:workspace/:slug?t=…`) and the approval page (`/approve/:token`), plain HTML with one
 * script each, served same-origin. The token is in the URL, so no page sends a Referer; scripts
 * come only from this origin; logos may come from any https origin.
 */
const dir = new URL('./pages/', import.meta.url);
const FILES: Record<string, { body: string; type: string }> = Object.fromEntries(
  [
    ['share.html', 'text/html'],
    ['approve.html', 'text/html'],
    ['share.js', 'text/javascript'],
    ['approve.js', 'text/javascript'],
    ['pages.css', 'text/css'],
  ].map(([name, type]) => [name, { body: readFileSync(new URL(name, dir), 'utf8'), type: `${type}; charset=utf-8` }]),
);
/**
 * The one Content-Security-Policy of the pages this API serves (share, approval, API reference,
 * console): nothing by default; scripts, styles and connections from this origin only; no form
 * posts elsewhere, no framing, no <base>. `widen` adds sources to a directive for a page that
 * needs them (the share page's logos, Swagger UI's inline styles), and nothing else changes.
 */
export function pageCsp(widen: Partial<Record<'img-src' | 'style-src' | 'font-src', string>> = {}): string {
  const policy: [string, string][] = [
    ['default-src', "'none'"],
    ['script-src', "'self'"],
    ['style-src', "'self'"],
    ['img-src', "'self'"],
    ['font-src', ''],
    ['connect-src', "'self'"],
    ['form-action', "'self'"],
    ['frame-ancestors', "'none'"],
    ['base-uri', "'none'"],
  ];
  return policy
    .map(([name, sources]) => [name, [sources, widen[name as keyof typeof widen] ?? ''].filter(Boolean).join(' ')])
    .filter(([, sources]) => sources)
    .map(([name, sources]) => `${name} ${sources}`)
    .join('; ');
}

/** Headers every page carries beside its CSP: no Referer (tokens may be in the URL), no type sniffing. */
export const PAGE_HEADERS = { 'Referrer-Policy': 'no-referrer', 'X-Content-Type-Options': 'nosniff' } as const;

const HEADERS = {
  'Content-Security-Policy': pageCsp({ 'img-src': 'https: data:' }),
  ...PAGE_HEADERS,
  'Cache-Control': 'no-store',
};

/*
 * The API reference at /docs: Swagger UI (npm swagger-ui-dist, see docs/decisions.md) rendering
 * /v1/openapi.json. Its assets come from node_modules through this server, never from a CDN. Swagger
 * UI sets inline styles, so this page alone allows 'unsafe-inline' styles; scripts stay same-origin.
 */
const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const DOC_ASSETS: Record<string, { body: Buffer; type: string }> = {
  'swagger-ui-bundle.js': {
    body: readFileSync(path.join(swaggerDir, 'swagger-ui-bundle.js')),
    type: 'text/javascript; charset=utf-8',
  },
  'swagger-ui.css': { body: readFileSync(path.join(swaggerDir, 'swagger-ui.css')), type: 'text/css; charset=utf-8' },
  'favicon.png': { body: readFileSync(path.join(swaggerDir, 'favicon-32x32.png')), type: 'image/png' },
  'docs.js': { body: readFileSync(new URL('docs.js', dir)), type: 'text/javascript; charset=utf-8' },
  'docs.css': { body: readFileSync(new URL('docs.css', dir)), type: 'text/css; charset=utf-8' },
};
const DOCS_HTML = readFileSync(new URL('docs.html', dir), 'utf8');
const DOCS_HEADERS = {
  'Content-Security-Policy': pageCsp({
    'style-src': "'unsafe-inline'",
    'img-src': 'data:',
    'font-src': "'self' data:",
  }),
  ...PAGE_HEADERS,
};

export function mountPages(router: Router): void {
  router.get('/docs', (ctx) => {
    ctx.set({ ...DOCS_HEADERS, 'Cache-Control': 'no-cache' });
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_HTML;
  });
  router.get('/docs/assets/:name', (ctx) => {
    const asset = Object.hasOwn(DOC_ASSETS, ctx.params.name) ? DOC_ASSETS[ctx.params.name] : undefined;
    if (!asset) return; // 404 from the router's fallthrough
    ctx.set({ ...DOCS_HEADERS, 'Cache-Control': 'public, max-age=3600' });
    ctx.type = asset.type;
    ctx.body = asset.body;
  });
  const serve = (name: string) => (ctx: { set: (h: Record<string, string>) => void; type: string; body: unknown }) => {
    ctx.set(HEADERS);
    ctx.type = FILES[name].type;
    ctx.body = FILES[name].body;
  };
  router.get('/share/:workspace/:slug', serve('share.html'));
  router.get('/approve/:token', serve('approve.html'));
  for (const name of ['share.js', 'approve.js', 'pages.css']) router.get(`/pages/${name}`, serve(name));
}
