import { readFileSync } from 'node:fs';
import type Router from '@koa/router';

/**
 * The two pages a person without an account uses (docs/shares.md): the share page
 * (`/share/:workspace/:slug?t=…`) and the approval page (`/approve/:token`), plain HTML with one
 * script each, served same-origin. The token is in the URL, so no page sends a Referer; scripts
 * come only from this origin; logos may come from any https origin.
 */
const dir = new URL('./pages/', import.meta.url);
const FILES: Record<string, { body: string; type: string }> = Object.fromEntries(
  [['share.html', 'text/html'], ['approve.html', 'text/html'], ['share.js', 'text/javascript'], ['approve.js', 'text/javascript'], ['pages.css', 'text/css']]
    .map(([name, type]) => [name, { body: readFileSync(new URL(name, dir), 'utf8'), type: `${type}; charset=utf-8` }]),
);
const HEADERS = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'Referrer-Policy': 'no-referrer', 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store',
};

export function mountPages(router: Router): void {
  const serve = (name: string) => (ctx: { set: (h: Record<string, string>) => void; type: string; body: unknown }) => {
    ctx.set(HEADERS);
    ctx.type = FILES[name].type;
    ctx.body = FILES[name].body;
  };
  router.get('/share/:workspace/:slug', serve('share.html'));
  router.get('/approve/:token', serve('approve.html'));
  for (const name of ['share.js', 'approve.js', 'pages.css']) router.get(`/pages/${name}`, serve(name));
}
