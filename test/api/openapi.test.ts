import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';

/**
 * The document as /v1/openapi.json serves it: `servers` names the address the client reached (the
 * request's origin; X-Forwarded-Proto/-Host only behind a trusted proxy; PUBLIC_BASE_URL when set)
 * and `info.license` the project's license.
 */
const direct = useTestApp();
const proxied = useTestApp({ TRUST_PROXY_HOPS: 1 });
const published = useTestApp({ PUBLIC_BASE_URL: 'https://cortex.example.com/' });

interface Doc {
  servers: { url: string }[];
  info: { license: { name: string; identifier: string } };
  paths: Record<string, unknown>;
}
const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.org' };

describe('GET /v1/openapi.json', () => {
  it('names the origin the client reached, ignoring forwarded headers without a trusted proxy', async () => {
    const res = await direct.get('/v1/openapi.json', undefined, forwarded);
    expect(res.status).toBe(200);
    const doc = res.body as unknown as Doc;
    expect(doc.servers).toEqual([{ url: direct.url, description: 'this API' }]);
    expect(doc.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
    expect(Object.keys(doc.paths)).toContain('/v1/neurons/{id}/invoke');
    // The cached document answers each client with its own address.
    const again = (await direct.get('/v1/openapi.json')).body as unknown as Doc;
    expect(again.servers[0].url).toBe(direct.url);
  });

  it("behind a trusted proxy, names the proxy's public address", async () => {
    const doc = (await proxied.get('/v1/openapi.json', undefined, forwarded)).body as unknown as Doc;
    expect(doc.servers[0].url).toBe('https://api.example.org');
    const plain = (await proxied.get('/v1/openapi.json')).body as unknown as Doc;
    expect(plain.servers[0].url).toBe(proxied.url);
  });

  it('names PUBLIC_BASE_URL when it is set', async () => {
    const doc = (await published.get('/v1/openapi.json', undefined, forwarded)).body as unknown as Doc;
    expect(doc.servers[0].url).toBe('https://cortex.example.com');
  });
});
