/**
 * Threat class: a stored body turned against the browser or the response itself. Actor: a member
 * or admin of a workspace who stores an artifact or an asset. Never reached: script running on the
 * platform's origin (stored HTML or SVG rendered as a page of the API), response splitting through a
 * content type, a body that can no longer be read (a 500 on every download). Closed by: one MediaType
 * schema for every content type a tenant gives (RFC 9110, no control characters; 400 naming the
 * field, nothing stored); every stored body served through api/stored-body.ts (nosniff, a sandboxing
 * CSP, and anything a browser would render as an attachment); an invalid type stored before the
 * check served as application/octet-stream; `nosniff` on every API response.
 */
import { describe, expect, it } from 'vitest';
import { buildWorkspace, useTestApp } from '../support/app.js';

const app = useTestApp();
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const SCRIPT = '<script>fetch("/v1/api-keys",{method:"POST"})</script>';

async function artifact(ws: Ws, body: Record<string, unknown>) {
  return app.post<{ artifact: { id: string } }>(
    '/v1/artifacts',
    ws.key,
    { title: 'Page', skip_embedding: true, ...body },
    ws.brainHeaders,
  );
}

describe('stored bodies a browser would render', () => {
  it.each([
    ['text/html', `<!doctype html><h1>hi</h1>${SCRIPT}`],
    ['text/html; charset=utf-8', `<html>${SCRIPT}</html>`],
    ['text/xml', `<x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>`],
    ['application/xml', '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'],
    ['text/javascript', 'alert(document.domain)'],
    ['text/x-unknown', `<html>${SCRIPT}</html>`],
  ])('an artifact of type %s is served as an attachment, nosniff, in a sandbox', async (type, content) => {
    const ws = await buildWorkspace(app);
    const created = await artifact(ws, { content, content_type: type });
    expect(created.status, created.text).toBe(201);
    const r = await app.get(`/v1/artifacts/${created.body.artifact.id}/body`, ws.key);
    expect(r.status).toBe(200);
    expect(r.text).toBe(content);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(r.headers.get('content-disposition')).toBe('attachment');
    expect(r.headers.get('content-type')).toBe(`${type.split(';')[0]}; charset=utf-8`);
  });

  it('SVG and XHTML rows (types the artifact schema does not take, stored by other paths) are attachments too', async () => {
    const ws = await buildWorkspace(app);
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.domain)"/>';
    const created = await artifact(ws, { content: svg, content_type: 'text/plain' });
    const id = created.body.artifact.id;
    for (const type of ['image/svg+xml', 'application/xhtml+xml']) {
      await app.deps.db.collection('documents').updateOne({ _id: id as never }, { $set: { contentType: type } });
      const r = await app.get(`/v1/artifacts/${id}/body`, ws.key);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe(`${type}; charset=utf-8`);
      expect(r.headers.get('content-disposition')).toBe('attachment');
      expect(r.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('plain text, Markdown and JSON stay inline, still nosniff and sandboxed', async () => {
    const ws = await buildWorkspace(app);
    for (const type of ['text/plain', 'text/markdown', 'application/json']) {
      const created = await artifact(ws, { content: '{"a":1}', content_type: type });
      expect(created.status, created.text).toBe(201);
      for (const format of ['raw', 'markdown', 'text']) {
        const r = await app.get(`/v1/artifacts/${created.body.artifact.id}/body?format=${format}`, ws.key);
        expect(r.status).toBe(200);
        expect(r.headers.get('content-disposition')).toBeNull();
        expect(r.headers.get('x-content-type-options')).toBe('nosniff');
        expect(r.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
      }
    }
  });
});

describe('content types are validated when stored', () => {
  const BAD = [
    'text/html\r\nSet-Cookie: session=attacker',
    'text/plain\nX-Frame-Options: ALLOW',
    'text/html\r\n',
    'text/plain; charset=utf-8\u0000',
    'text/plain; name="a\rb"',
    'text',
    'text/',
    `text/${'a'.repeat(300)}`,
    'tëxt/plain',
  ];

  it('an artifact with a control character (CR/LF), or that is no media type, is refused naming content_type', async () => {
    const ws = await buildWorkspace(app);
    for (const content_type of BAD) {
      const r = await artifact(ws, { content: 'x', content_type });
      expect(r.status, JSON.stringify(content_type)).toBe(400);
      expect(r.text).toMatch(/"message":"content_type: /);
    }
    const list = await app.get('/v1/artifacts', ws.key, ws.brainHeaders);
    expect(list.body.artifacts).toEqual([]);
  });

  it('an artifact update with a bad content type is refused and changes nothing', async () => {
    const ws = await buildWorkspace(app);
    const created = await artifact(ws, { content: 'x', content_type: 'text/plain' });
    const id = created.body.artifact.id;
    for (const content_type of BAD) {
      const r = await app.put(`/v1/artifacts/${id}`, ws.key, { content: 'y', content_type });
      expect(r.status, JSON.stringify(content_type)).toBe(400);
      expect(String(r.body.message)).toMatch(/^content_type: /);
    }
    const body = await app.get(`/v1/artifacts/${id}/body`, ws.key);
    expect(body.text).toBe('x');
    expect(body.headers.get('content-type')).toBe('text/plain; charset=utf-8');
  });

  it('an asset with a bad declared content type is refused naming content_type, nothing stored', async () => {
    const ws = await buildWorkspace(app);
    for (const content_type of BAD) {
      const r = await app.post(
        '/v1/assets',
        ws.key,
        { name: 'a.txt', content: 'hello', content_type, skip_embedding: true },
        ws.brainHeaders,
      );
      expect(r.status, JSON.stringify(content_type)).toBe(400);
      expect(String(r.body.message)).toMatch(/^content_type: /);
    }
    expect((await app.get('/v1/assets', ws.key, ws.brainHeaders)).body.assets).toEqual([]);
  });

  it('a row stored before the check (CR/LF in its type) is served as application/octet-stream, not a 500', async () => {
    const ws = await buildWorkspace(app);
    const created = await artifact(ws, { content: `<html>${SCRIPT}</html>`, content_type: 'text/plain' });
    const id = created.body.artifact.id;
    await app.deps.db
      .collection('documents')
      .updateOne({ _id: id as never }, { $set: { contentType: 'text/html\r\nSet-Cookie: session=attacker' } });
    const r = await app.get(`/v1/artifacts/${id}/body`, ws.key);
    expect(r.status).toBe(200);
    expect(r.text).toBe(`<html>${SCRIPT}</html>`);
    expect(r.headers.get('content-type')).toBe('application/octet-stream');
    expect(r.headers.get('content-disposition')).toBe('attachment');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('set-cookie')).toBeNull();
    // The JSON form still reads it (the stored text is data there).
    const json = await app.get(`/v1/artifacts/${id}/body?format=json`, ws.key);
    expect(json.status).toBe(200);
  });
});

describe('every API response is nosniff', () => {
  it.each(['/health', '/v1/openapi.json', '/docs', '/v1/does-not-exist'])('%s', async (path) => {
    const r = await app.get(path);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('an error answer too', async () => {
    const r = await app.get('/v1/artifacts', 'not-a-key');
    expect(r.status).toBe(401);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
