import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors.js';
import { setOwn } from '../own.js';

/**
 * The platform's one outbound-HTTP guard (docs/decisions.md): every URL a user can influence
 * (HTTP and MCP tool servers, OAuth endpoints, file_url ingestion) is fetched through it.
 *   - http and https only;
 *   - the host is resolved, and every address must be public unicast (ipaddr.js decides:
 *     loopback, private, link-local — cloud metadata at 169.254.169.254 —, unique-local, CGNAT,
 *     multicast, reserved and unspecified are refused, IPv4-mapped IPv6 included);
 *   - the connection goes to the address that was checked (a pinned `lookup`), so a DNS answer
 *     that changes between check and connect (rebinding) cannot move it;
 *   - redirects are followed by hand, each hop checked again, and credentials (Authorization,
 *     Cookie) are dropped when a hop leaves the origin;
 *   - hosts on the configured allow-list (OUTBOUND_ALLOW_HOSTS, self-hosted tool servers) skip
 *     the address check, nothing else;
 *   - an answer body longer than maxResponseBytes fails the read.
 */
export class OutboundBlocked extends AppError {
  constructor(message: string) {
    super('VALIDATION_ERROR', 400, `Outbound request refused: ${message}`);
  }
}

type Resolver = (host: string) => Promise<LookupAddress[]>;
const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) =>
    dnsLookup(host, { all: true, verbatim: true }, (e, a) => (e ? reject(e) : resolve(a))),
  );

export interface GuardOptions {
  /** Hostnames (optionally host:port) that may resolve anywhere, for self-hosted servers. */
  allowHosts: string[];
  /** Tests inject a resolver (a hostname that resolves to a private address). */
  resolve?: Resolver;
  maxRedirects?: number;
  timeoutMs?: number;
  /** Longest answer body read, in bytes (default 16 MiB); a longer one fails the read. */
  maxResponseBytes?: number;
}

/** Default cap on one answer's body: a tool server cannot make a worker buffer without end. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** Why an address may not be reached (null: public unicast). */
export function blockedRange(address: string): string | null {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  const range = ip.range();
  return range === 'unicast' ? null : range;
}

const hostKey = (u: URL) => [
  u.hostname.replace(/^\[|\]$/g, '').toLowerCase(),
  `${u.hostname.replace(/^\[|\]$/g, '').toLowerCase()}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`,
];

export function createGuard(opts: GuardOptions) {
  const resolve = opts.resolve ?? systemResolver;
  const allow = new Set(opts.allowHosts.map((h) => h.trim().toLowerCase()).filter(Boolean));

  /** Checks one URL and returns the address to connect to. */
  async function check(raw: string | URL): Promise<{ url: URL; address: LookupAddress }> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundBlocked('not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new OutboundBlocked(`${url.protocol} URLs are not allowed (http and https only)`);
    if (url.username || url.password) throw new OutboundBlocked('URLs with credentials are not allowed');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const allowed = hostKey(url).some((k) => allow.has(k));
    const addresses = ipaddr.isValid(host)
      ? [{ address: host, family: host.includes(':') ? 6 : 4 }]
      : await resolve(host).catch(() => {
          throw new OutboundBlocked(`${host} does not resolve`);
        });
    if (!addresses.length) throw new OutboundBlocked(`${host} does not resolve`);
    if (!allowed) {
      for (const a of addresses) {
        const why = blockedRange(a.address);
        if (why) throw new OutboundBlocked(`${host} resolves to a ${why} address (${a.address})`);
      }
    }
    return { url, address: addresses[0] };
  }

  const maxBytes = opts.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const tooLong = (url: URL) => new OutboundBlocked(`the answer from ${url.host} is longer than ${maxBytes} bytes`);

  /** The body as a web stream that fails once more than maxBytes came (read lazily, as the caller pulls). */
  function cappedBody(url: URL, res: http.IncomingMessage): ReadableStream<Uint8Array> {
    let seen = 0;
    return (Readable.toWeb(res) as ReadableStream<Uint8Array>).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, ctrl) {
          seen += chunk.byteLength;
          if (seen > maxBytes) {
            res.destroy();
            ctrl.error(tooLong(url));
          } else ctrl.enqueue(chunk);
        },
      }),
    );
  }

  /** One request to a checked address (no redirect handling). */
  function once(
    url: URL,
    address: LookupAddress,
    init: { method: string; headers: Record<string, string>; body?: Buffer; signal?: AbortSignal },
    timeoutMs: number,
  ) {
    return new Promise<http.IncomingMessage>((resolveRes, reject) => {
      const mod = url.protocol === 'https:' ? https : http;
      const req = mod.request(url, {
        method: init.method,
        headers: init.headers,
        timeout: timeoutMs,
        signal: init.signal,
        // Pinned: the socket connects to the address that was checked, whatever DNS says now.
        lookup: ((
          _h: string,
          o: { all?: boolean },
          cb: (err: NodeJS.ErrnoException | null, a: string | LookupAddress[], f?: number) => void,
        ) => (o?.all ? cb(null, [address]) : cb(null, address.address, address.family))) as unknown as LookupFunction,
      });
      req.on('response', (res) => {
        // A body longer than the cap fails the read (announced by Content-Length, or counted as it arrives).
        if (Number(res.headers['content-length'] ?? 0) > maxBytes) {
          res.destroy();
          reject(tooLong(url));
          return;
        }
        resolveRes(res);
      });
      req.on('timeout', () => req.destroy(new OutboundBlocked(`no answer from ${url.host} within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(init.body);
    });
  }

  /**
   * A fetch-compatible function (the MCP SDK and OAuth clients take it) that sends every request
   * and every redirect hop through the checks.
   */
  async function guardedFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
    const req = input instanceof Request ? input : null;
    let url = await check(req ? req.url : (input as string | URL));
    let method = (init.method ?? req?.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = {};
    new Headers(init.headers ?? req?.headers ?? {}).forEach((v, k) => setOwn(headers, k, v));
    let body: Buffer | undefined =
      init.body != null
        ? Buffer.from(await new Response(init.body as BodyInit).arrayBuffer())
        : req && req.body
          ? Buffer.from(await req.arrayBuffer())
          : undefined;
    const manual = init.redirect === 'manual';
    for (let hop = 0; ; hop++) {
      const res = await once(
        url.url,
        url.address,
        { method, headers, body, signal: init.signal ?? undefined },
        opts.timeoutMs ?? 30_000,
      );
      const status = res.statusCode ?? 502;
      const location = res.headers.location;
      if (status >= 300 && status < 400 && location && !manual) {
        res.resume();
        if (init.redirect === 'error') throw new OutboundBlocked(`${url.url.host} answered with a redirect`);
        if (hop >= (opts.maxRedirects ?? 5)) throw new OutboundBlocked('too many redirects');
        // Every hop is checked as the first was.
        const from = url.url.origin;
        url = await check(new URL(location, url.url));
        // Credentials stay with the origin they were meant for (as fetch does): a redirect elsewhere loses them.
        if (url.url.origin !== from)
          for (const h of ['authorization', 'cookie', 'proxy-authorization']) delete headers[h];
        if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
          delete headers['content-type'];
          delete headers['content-length'];
        }
        continue;
      }
      const out = new Headers();
      for (const [k, v] of Object.entries(res.headers))
        if (v !== undefined) for (const one of Array.isArray(v) ? v : [v]) out.append(k, one);
      const nullBody = status === 204 || status === 304 || method === 'HEAD';
      if (nullBody) res.resume();
      return new Response(nullBody ? null : cappedBody(url.url, res), {
        status,
        statusText: res.statusMessage,
        headers: out,
      });
    }
  }

  return { check, fetch: guardedFetch };
}
export type Guard = ReturnType<typeof createGuard>;
