/**
 * The http node's service on its own (src/pathways/http.ts): which secrets and connections
 * a node's templates name, redaction, and a request to a loopback receiver through a guard that
 * allows it, with stand-ins for the secret and connection services.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuard } from '../../src/net/guard.js';
import type { ConnectionService } from '../../src/connections/index.js';
import {
  createPathwayHttpService,
  HttpNodeFailure,
  redactor,
  referencedNames,
  type HttpNodeCall,
} from '../../src/pathways/http.js';
import type { SecretService } from '../../src/secrets/service.js';
import { credentialInOrigin, hostAllowed, splitOrigin } from '../../src/expressions/credentials.js';

describe('referencedNames and redactor', () => {
  it('finds secrets.NAME and connections.ID (backticks for ids with dashes) inside placeholders only', () => {
    expect(
      referencedNames([
        'Bearer {{ secrets.TOKEN }}',
        '{{ secrets.`OTHER` & connections.github }} secrets.OUTSIDE',
        '{{ connections.`my-crm` }}{{ $uppercase(secrets.TOKEN) }}',
      ]),
    ).toEqual({ secrets: ['TOKEN', 'OTHER'], connections: ['github', 'my-crm'] });
  });

  it('redacts a value as written, URL-encoded and JSON-escaped', () => {
    const r = redactor(['a b"c', '']);
    expect(r('x a b"c y a%20b%22c z a b\\"c')).toBe('x [redacted] y [redacted] z [redacted]');
    expect(redactor([])('unchanged')).toBe('unchanged');
  });

  it('redacts the forms the platform writes: lowercased (a URL host), form-encoded, JSON-escaped twice', () => {
    const r = redactor(['SeCrEt Value/1"']);
    expect(r('getaddrinfo ENOTFOUND secret value/1" x')).toBe('getaddrinfo ENOTFOUND [redacted] x');
    expect(r('q=SeCrEt+Value%2F1%22')).toBe('q=[redacted]');
    expect(r(JSON.stringify(JSON.stringify({ v: 'SeCrEt Value/1"' })))).not.toContain('SeCrEt');
  });
});

describe('the URL origin and allowed hosts (src/expressions/credentials.ts)', () => {
  it('cuts a URL template where its origin ends', () => {
    expect(splitOrigin('https://api.x.com/a/{{ secrets.K }}')).toEqual({
      origin: 'https://api.x.com',
      rest: '/a/{{ secrets.K }}',
    });
    expect(splitOrigin('https://{{ secrets.K }}.evil.com/p').origin).toBe('https://{{ secrets.K }}.evil.com');
    expect(splitOrigin('{{ input.base }}/v1?k={{ secrets.K }}')).toEqual({
      origin: '{{ input.base }}',
      rest: '/v1?k={{ secrets.K }}',
    });
    expect(splitOrigin('https://a.com?x={{ secrets.K }}').origin).toBe('https://a.com');
    expect(splitOrigin('https://a.com\\{{ secrets.K }}').origin).toBe('https://a.com');
  });

  it('finds a secret or connection in the scheme, user info, host or port, however it is written', () => {
    expect(credentialInOrigin('https://{{ secrets.K }}.evil.com/')).toBe(true);
    expect(credentialInOrigin('https://h:{{ $string($lookup($, "secr" & "ets")) }}/')).toBe(false);
    expect(credentialInOrigin('https://x.com:{{ $keys($.secrets)[0] }}/')).toBe(true);
    expect(credentialInOrigin('{{ "https://" & connections.crm }}/x')).toBe(true);
    expect(credentialInOrigin('https://api.x.com/{{ secrets.K }}')).toBe(false);
  });

  it('matches hosts exactly or under a *.suffix', () => {
    expect(hostAllowed('api.example.com', ['api.example.com'])).toBe(true);
    expect(hostAllowed('API.example.com', ['*.example.com'])).toBe(true);
    expect(hostAllowed('example.com', ['*.example.com'])).toBe(false);
    expect(hostAllowed('evilexample.com', ['*.example.com'])).toBe(false);
    expect(hostAllowed('api.example.com.evil.io', ['api.example.com'])).toBe(false);
  });
});

describe('pathway http service', () => {
  let server: Server;
  let base = '';
  const got: IncomingMessage[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      got.push(req);
      if (req.url === '/slow') return void setTimeout(() => res.end('late'), 500);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ auth: req.headers.authorization }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const secrets = {
    reveal: async (_ws: string, names: string[]) =>
      new Map(names.filter((n) => n === 'TOKEN').map((n) => [n, 'secret-value'] as const)),
    policies: async (_ws: string, names: string[]) =>
      new Map(names.filter((n) => n === 'TOKEN').map((n) => [n, { allowedHosts: null, usableBy: 'admins' }] as const)),
  } as unknown as SecretService;
  const connections = {
    integration: async (_ws: string, id: string) => (id === 'crm' ? { per: 'user' } : null),
    tokenFor: async (_who: unknown, id: string) => (id === 'crm' ? 'oauth-token' : null),
  } as unknown as ConnectionService;
  const service = createPathwayHttpService({
    guard: createGuard({ allowHosts: ['127.0.0.1'] }),
    secrets,
    connections,
    saverOf: async () => ({ userId: 'u', admin: true, editor: true }),
  });
  const call = (data: Record<string, unknown>): HttpNodeCall => ({
    scope: { workspaceId: 'ws', userId: 'u', apiKeyId: null, roles: [], credential: 'jwt' },
    jobId: 'job-1',
    nodeId: 'h',
    visit: 2,
    data,
    context: { input: {}, last: null, nodes: {}, loops: {} },
  });

  it("sends a connection's token and the visit's Idempotency-Key; the value is redacted", async () => {
    const out = await service.request(
      call({ url: `${base}/a`, headers: { Authorization: 'Bearer {{ connections.crm }}' } }),
    );
    expect(got.at(-1)?.headers.authorization).toBe('Bearer oauth-token');
    expect(got.at(-1)?.headers['idempotency-key']).toBe('job-1:h:2');
    expect(out.body).toEqual({ auth: 'Bearer [redacted]' });
  });

  it('fails without retry for a missing connection, and retryably after timeout_ms', async () => {
    const missing = await service
      .request(call({ url: `${base}/a`, headers: { Authorization: '{{ connections.nope }}' } }))
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(HttpNodeFailure);
    expect(missing).toMatchObject({ retryable: false, type: 'HTTP_SECRET' });
    const slow = await service.request(call({ url: `${base}/slow`, timeout_ms: 100 })).catch((e: unknown) => e);
    expect(slow).toMatchObject({ retryable: true, type: 'HTTP_TIMEOUT', message: 'no answer within 100 ms' });
  });

  it('a template that fails to evaluate fails without retry, its secret redacted', async () => {
    const bad = await service
      .request(call({ url: `${base}/a`, headers: { 'X-A': '{{ secrets.TOKEN + 1 }}' } }))
      .catch((e: unknown) => e);
    expect(bad).toMatchObject({ retryable: false, type: 'HTTP_TEMPLATE' });
    expect((bad as Error).message).not.toContain('secret-value');
  });
});
