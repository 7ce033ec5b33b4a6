import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import Router from '@koa/router';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountConsole } from '../../api/console.js';
import { SessionContext } from '../../src/platform/schemas.js';
import { buildWorkspace, useTestApp } from '../support/app.js';

/**
 * How the API serves the console (docs/console.md): the built index at /console and at every client
 * route under it, hashed assets with their content types and a year's caching, gzip when accepted,
 * the pages' CSP, 404 for a missing asset, and a 503 page saying how to build when the build is
 * missing. The real app serves console/dist (built by provisioning); a Koa app over a temporary
 * folder shows the missing and rebuilt cases without touching it.
 */
const app = useTestApp({ TEMPORAL_UI_URL: 'http://127.0.0.1:8233/' });

describe('the console at /console', () => {
  it('serves index.html for the app and its client routes, with the strict CSP and no caching', async () => {
    for (const p of ['/console', '/console/', '/console/runs', '/console/runs/7b0c5d2e-3f41-4a8b-9c6d-1e2f3a4b5c6d']) {
      const res = await fetch(app.url + p);
      expect(res.status, p).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self';");
      expect(csp).toContain("style-src 'self';");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const html = await res.text();
      expect(html).toContain('<div id="root"></div>');
      expect(html).toMatch(/<script type="module" crossorigin src="\/console\/assets\/index-[\w-]+\.js"><\/script>/);
      // No inline script: the CSP would refuse it.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });

  it('serves hashed assets with their types, a year of caching and gzip; a missing one is a 404', async () => {
    const dist = path.resolve(import.meta.dirname, '../../console/dist/assets');
    if (!existsSync(dist))
      throw new Error('console/dist is missing: run scripts/provision.sh (or npm run console:build)');
    const assets = await readdir(dist);
    // The entry script and style sheet (lazy pages add chunks, some too small to be worth gzip).
    const js = assets.find((a) => /^index-[\w-]+\.js$/.test(a))!;
    const css = assets.find((a) => /^index-[\w-]+\.css$/.test(a))!;
    const plain = await fetch(`${app.url}/console/assets/${js}`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.get('content-encoding')).toBeNull();
    const body = Buffer.from(await plain.arrayBuffer());
    // node's fetch decodes gzip itself: read the raw bytes through http to see the encoding.
    const gz = await rawGet(`${app.url}/console/assets/${js}`, { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers.vary).toBe('Accept-Encoding');
    expect(gz.body.length).toBeLessThan(body.length / 2);
    expect(gunzipSync(gz.body).equals(body)).toBe(true);
    const style = await fetch(`${app.url}/console/assets/${css}`);
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await fetch(`${app.url}/console/assets/index-missing.js`)).status).toBe(404);
    expect((await fetch(`${app.url}/console/assets/..%2Fpackage.json`)).status).toBe(404);
    expect((await fetch(`${app.url}/console/missing.js`)).status).toBe(404);
  });

  it('tells the console where the Temporal UI is (session context)', async () => {
    const ws = await buildWorkspace(app);
    const res = await app.get('/v1/session/context', ws.key);
    expect(res.status).toBe(200);
    expect(SessionContext.parse(res.body).temporal).toEqual({
      namespace: app.config.TEMPORAL_NAMESPACE,
      ui_url: 'http://127.0.0.1:8233',
    });
  });
});

describe('mountConsole over a folder', () => {
  let dir: string;
  let server: Server;
  let url: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'console-dist-'));
    const koa = new Koa();
    const router = new Router();
    mountConsole(router, dir);
    koa.use(router.routes());
    server = createServer(koa.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => server?.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a 503 page that says how to build while the build is missing, then the build once it exists', async () => {
    const missing = await fetch(`${url}/console/runs`);
    expect(missing.status).toBe(503);
    expect(missing.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await missing.text()).toContain('npm run build');
    await mkdir(path.join(dir, 'assets'));
    await writeFile(path.join(dir, 'index.html'), '<!doctype html><title>built</title>');
    await writeFile(path.join(dir, 'assets', 'app-abc123.js'), 'console.log(1)');
    const built = await fetch(`${url}/console/runs`);
    expect(built.status).toBe(200);
    expect(await built.text()).toContain('<title>built</title>');
    expect(await (await fetch(`${url}/console/assets/app-abc123.js`)).text()).toBe('console.log(1)');
  });
});

/** A GET whose body is read as sent (no decoding), to see the Content-Encoding the server chose. */
async function rawGet(url: string, headers: Record<string, string>) {
  const { request } = await import('node:http');
  return new Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}
