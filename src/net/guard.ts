import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import { AppError, validationError } from '../kernel/errors.js';
import { setOwn } from '../kernel/own.js';

/**
 * The platform's one outbound-HTTP guard (docs/decisions.md): every URL a user can influence
 * (HTTP and MCP tool servers, OAuth endpoints, file_url ingestion) is fetched through it.
 *   - http and https only;
 *   - the host is resolved, and every address must be public unicast (ipaddr.js decides:
 *     loopback, private, link-local — cloud metadata at 169.254.169.254 —, unique-local, CGNAT,
 *     multicast, reserved and unspecified are refused), and an IPv6 address that embeds an IPv4
 *     one (mapped, compatible, NAT64, 6to4, Teredo, ISATAP: embeddedIPv4) is refused when the
 *     IPv4 is; numeric IPv4 forms (`2130706433`, `0177.0.0.1`, `0x7f.1`, a trailing dot) are
 *     normalised by the URL parser before the check;
 *   - a URL a tenant saves for later is checked when it is saved (checkSaved, a 400 naming the
 *     field) and again every time it is called;
 *   - the connection goes to the address that was checked (a pinned `lookup`), so a DNS answer
 *     that changes between check and connect (rebinding) cannot move it;
 *   - redirects are followed by hand, each hop checked again, and credentials (Authorization,
 *     Cookie) are dropped when a hop leaves the origin;
 *   - hosts on the configured allow-list (OUTBOUND_ALLOW_HOSTS, self-hosted tool servers) skip
 *     the address check, nothing else;
 *   - an answer body longer than maxResponseBytes fails the read.
 */
export class OutboundBlocked extends AppError {
  constructor(
    /** Why, without the prefix (a save-time refusal puts the field's name before it). */
    readonly reason: string,
    /** The host did not resolve: refused at use, accepted at save (checked again when it is called). */
    readonly unresolved = false,
  ) {
    super('VALIDATION_ERROR', 400, `Outbound request refused: ${reason}`);
  }
}

/** For a URL a request hands in to be fetched now: the guard's refusal as a 400 naming that field. */
export const refusedAs =
  (field: string) =>
  (e: unknown): never => {
    if (e instanceof OutboundBlocked) throw validationError(`${field}: refused by the outbound guard: ${e.reason}`);
    throw e;
  };

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
  /** How long a save waits for a URL's host to resolve (default SAVE_RESOLVE_MS). */
  saveResolveMs?: number;
  /** Longest answer body read, in bytes (default 16 MiB); a longer one fails the read. */
  maxResponseBytes?: number;
}

/** How long a save waits for a URL's host to resolve before it accepts the URL (checked again at use). */
const SAVE_RESOLVE_MS = 3000;

/** Default cap on one answer's body: a tool server cannot make a worker buffer without end. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

/**
 * The IPv4 addresses an IPv6 address carries by a standard embedding, each of which a network
 * (a dual stack, a NAT64, a 6to4 or Teredo relay, an ISATAP router) may route to:
 *   - IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d` (RFC 6145) and the
 *     deprecated IPv4-compatible `::a.b.c.d` (hex forms alike: `::ffff:7f00:1`, `::7f00:1`);
 *   - NAT64 `64:ff9b::a.b.c.d` (RFC 6052; the local-use `64:ff9b:1::/48` of RFC 8215 is refused
 *     whole, its prefix length is the operator's);
 *   - 6to4 `2002:AABB:CCDD::/48`; Teredo `2001:0::/32` (its server and its XOR'd client address);
 *   - ISATAP interface identifiers `…:0:5efe:a.b.c.d` (and `200:5efe`) under any prefix.
 */
export function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = ip.parts;
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && (p[5] === 0xffff || p[5] === 0)) return [v4(p[6], p[7])]; // mapped, compatible
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return [v4(p[6], p[7])]; // translated
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return [v4(p[6], p[7])]; // NAT64 well-known
  if (p[0] === 0x2002) return [v4(p[1], p[2])]; // 6to4
  if (p[0] === 0x2001 && p[1] === 0) return [v4(p[2], p[3]), v4(p[6] ^ 0xffff, p[7] ^ 0xffff)]; // Teredo
  if ((p[4] & 0xfcff) === 0 && p[5] === 0x5efe) return [v4(p[6], p[7])]; // ISATAP
  return [];
}

/** ipaddr.js's IPv6 ranges that may carry an IPv4 address (the rest are refused by their range alone). */
const EMBEDDING_RANGES = new Set(['unicast', 'ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

/**
 * Why an address may not be reached (null: public unicast). ipaddr.js classifies it; an IPv6
 * address is refused when it is not global unicast, or when an IPv4 address it embeds is not
 * (IPv4-mapped addresses are judged by their IPv4 alone, as the socket reaches it). Zone ids
 * (`%eth0`) are dropped first.
 */
export function blockedRange(address: string): string | null {
  const bare = address.replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return 'not an IP address';
  const ip = ipaddr.parse(bare);
  if (ip.kind() === 'ipv4') {
    const range = ip.range();
    return range === 'unicast' ? null : range;
  }
  const ip6 = ip as ipaddr.IPv6;
  const p = ip6.parts;
  const range = ip6.range();
  // Loopback, link-local, unique-local, multicast, reserved…: refused as such.
  if (!EMBEDDING_RANGES.has(range)) return range;
  if (p[0] === 0x64 && p[1] === 0xff9b && p[2] === 1) return 'local-use NAT64 (64:ff9b:1::/48)';
  for (const inner of embeddedIPv4(ip6)) {
    const innerRange = inner.range();
    if (innerRange !== 'unicast') return `${innerRange} (it embeds ${inner.toString()})`;
  }
  if (range === 'ipv4Mapped') return null; // its IPv4 is public
  if (range !== 'unicast') return range; // 6to4, Teredo, NAT64, translated: refused whatever they embed
  // `::a.b.c.d` (IPv4-compatible, deprecated by RFC 4291) is never a destination, whatever it embeds.
  return p.slice(0, 6).every((x) => x === 0) ? 'IPv4-compatible (deprecated)' : null;
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
          throw new OutboundBlocked(`${host} does not resolve`, true);
        });
    if (!addresses.length) throw new OutboundBlocked(`${host} does not resolve`, true);
    if (!allowed) {
      for (const a of addresses) {
        const why = blockedRange(a.address);
        if (why) throw new OutboundBlocked(`${host} resolves to a ${why} address (${a.address})`);
      }
    }
    return { url, address: addresses[0] };
  }

  /**
   * When a tenant SAVES a URL the platform will call later (a webhook endpoint, a tool or MCP
   * server, an OAuth endpoint, a literal pathway http node URL): the same checks as at use, as a
   * 400 naming the field. A name that does not resolve now (or not within SAVE_RESOLVE_MS) is
   * accepted: the call is checked again, address by address, every time it is made.
   */
  async function checkSaved(raw: string, field: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>(
      (r) => (timer = setTimeout(() => r('late'), opts.saveResolveMs ?? SAVE_RESOLVE_MS)),
    );
    const checking = check(raw);
    checking.catch(() => undefined); // a late refusal after the wait ran out is not an unhandled rejection
    try {
      await Promise.race([checking, late]);
    } catch (e) {
      if (!(e instanceof OutboundBlocked)) throw e;
      if (!e.unresolved) refusedAs(field)(e);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * checkSaved for the several URLs one save holds, checked together: one save waits at most one
   * SAVE_RESOLVE_MS, whatever the number of URLs (a save stays within its request's deadline); the
   * first refused in the given order names its field.
   */
  async function checkSavedAll(entries: readonly (readonly [raw: string, field: string])[]): Promise<void> {
    const outcomes = await Promise.allSettled(entries.map(([raw, field]) => checkSaved(raw, field)));
    const refused = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (refused) throw refused.reason;
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

  return { check, checkSaved, checkSavedAll, fetch: guardedFetch };
}
export type Guard = ReturnType<typeof createGuard>;
