/**
 * The outbound guard's classification (src/net/guard.ts): every IPv6 form that embeds an IPv4
 * address is judged by that address, numeric IPv4 forms are normalised before the check, and a URL
 * saved for later is refused with the field's name (a name that does not resolve is accepted).
 */
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { blockedRange, createGuard, embeddedIPv4 } from '../../src/net/guard.js';
import { AppError } from '../../src/kernel/errors.js';

describe('blockedRange', () => {
  it.each([
    // IPv4-mapped, dotted and hex
    ['::ffff:127.0.0.1', /loopback/],
    ['::ffff:7f00:1', /loopback/],
    ['::ffff:a9fe:a9fe', /linkLocal/],
    // IPv4-compatible (deprecated), dotted and hex: the form that passed before
    ['::7f00:1', /loopback \(it embeds 127\.0\.0\.1\)/],
    ['::a9fe:a9fe', /linkLocal \(it embeds 169\.254\.169\.254\)/],
    ['::a00:1', /private/],
    // IPv4-translated (RFC 6145)
    ['::ffff:0:7f00:1', /loopback/],
    // NAT64: the well-known prefix, and the local-use /48 refused whole
    ['64:ff9b::7f00:1', /loopback/],
    ['64:ff9b::a9fe:a9fe', /linkLocal/],
    ['64:ff9b:1::a9fe:a9fe', /local-use NAT64/],
    ['64:ff9b:1:abcd::808:808', /local-use NAT64/],
    // 6to4 2002:AABB:CCDD::/48
    ['2002:7f00:1::1', /loopback/],
    ['2002:a9fe:a9fe::', /linkLocal/],
    ['2002:c0a8:101::5', /private/],
    // Teredo: server 65.54.227.120, client 127.0.0.1 XOR'd (80ff:fffe)
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', /loopback \(it embeds 127\.0\.0\.1\)/],
    // ISATAP interface identifiers under a global prefix
    ['2600::5efe:7f00:1', /loopback/],
    ['2600:1f18::200:5efe:a9fe:a9fe', /linkLocal/],
    ['::5efe:a00:1', /private/],
    // Plain IPv6 internals
    ['::1', /loopback/],
    ['::', /unspecified/],
    ['fd00:ec2::254', /uniqueLocal/],
    ['fe80::1', /linkLocal/],
    ['fe80::1%eth0', /linkLocal/],
    ['ff02::1', /multicast/],
    // IPv4 internals
    ['127.0.0.1', /loopback/],
    ['169.254.169.254', /linkLocal/],
    ['10.1.2.3', /private/],
    ['100.64.0.1', /carrierGradeNat/],
    ['0.0.0.0', /unspecified/],
  ])('%s is refused (%s)', (address, why) => {
    expect(blockedRange(address)).toMatch(why);
  });

  it('public addresses pass, in every form that carries a public IPv4 only where the form is a real destination', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2001:4860:4860::8888', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(blockedRange(a), a).toBeNull();
    // Transition forms stay refused even around a public IPv4 (nothing the platform calls needs them).
    expect(blockedRange('::808:808')).toMatch(/IPv4-compatible/);
    expect(blockedRange('2002:808:808::1')).toBe('6to4');
    expect(blockedRange('64:ff9b::808:808')).toBe('rfc6052');
  });

  it('embeddedIPv4 reads each embedding', () => {
    const e = (a: string) => embeddedIPv4(ipaddr.IPv6.parse(a)).map(String);
    expect(e('::ffff:7f00:1')).toEqual(['127.0.0.1']);
    expect(e('::7f00:1')).toEqual(['127.0.0.1']);
    expect(e('64:ff9b::c000:201')).toEqual(['192.0.2.1']);
    expect(e('2002:c000:201::')).toEqual(['192.0.2.1']);
    expect(e('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toEqual(['65.54.227.120', '192.0.2.45']);
    expect(e('2600::5efe:c000:201')).toEqual(['192.0.2.1']);
    expect(e('2001:4860:4860::8888')).toEqual([]);
  });
});

describe('the guard on URLs', () => {
  const guard = createGuard({ allowHosts: [], resolve: async () => [{ address: '93.184.216.34', family: 4 }] });

  it.each([
    'http://2852039166/latest/meta-data/', // 169.254.169.254 as one decimal number
    'http://0251.0376.0251.0376/', // octal
    'http://0xa9fea9fe/', // hex
    'http://0xa9.0xfe.0xa9.0xfe/',
    'http://169.254.169.254./', // trailing dot
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://0x7f.1/',
    'http://127.1/',
    'http://[::127.0.0.1]/',
    'http://[::7f00:1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/',
    'http://[64:ff9b::169.254.169.254]/',
    'http://[2002:a9fe:a9fe::1]/',
    'http://[fd00:ec2::254]/latest/meta-data/',
  ])('%s is refused', async (url) => {
    await expect(guard.check(url)).rejects.toThrow(/Outbound request refused/);
  });

  it('zone ids never reach the check: the URL parser refuses them', async () => {
    await expect(guard.check('http://[fe80::1%25eth0]/')).rejects.toThrow(/not a valid URL/);
  });

  it('a name resolving to an embedded internal address is refused', async () => {
    const rebinding = createGuard({
      allowHosts: [],
      resolve: async () => [{ address: '::ffff:a9fe:a9fe', family: 6 }],
    });
    await expect(rebinding.check('https://metadata.example/')).rejects.toThrow(/linkLocal/);
  });
});

describe('checkSaved', () => {
  const resolving = (address: string) => async () => [{ address, family: address.includes(':') ? 6 : 4 }];

  it('refuses an internal address with a 400 naming the field', async () => {
    const guard = createGuard({ allowHosts: [], resolve: resolving('10.0.0.7') });
    const err = await guard.checkSaved('https://hooks.example/x', 'url').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect((err as Error).message).toMatch(/^url: refused by the outbound guard: hooks\.example resolves to a private/);
    await expect(guard.checkSaved('http://[::a9fe:a9fe]/', 'token_endpoint')).rejects.toThrow(/^token_endpoint: /);
    await expect(guard.checkSaved('ftp://x.example/', 'metadata.server_url')).rejects.toThrow(
      /^metadata\.server_url: .*http and https only/,
    );
  });

  it('accepts a public address, a name that does not resolve now, and an allowed host', async () => {
    await createGuard({ allowHosts: [], resolve: resolving('93.184.216.34') }).checkSaved('https://a.example/', 'url');
    await createGuard({
      allowHosts: [],
      resolve: async () => {
        throw new Error('ENOTFOUND');
      },
    }).checkSaved('https://later.example/', 'url');
    // A resolver that does not answer in time: accepted at save (the call is checked when it is made).
    await createGuard({ allowHosts: [], saveResolveMs: 50, resolve: () => new Promise(() => undefined) }).checkSaved(
      'https://slow.example/',
      'url',
    );
    // The operator's allow-list (OUTBOUND_ALLOW_HOSTS) holds at save as at use.
    await createGuard({ allowHosts: ['127.0.0.1'] }).checkSaved('http://127.0.0.1:9/hook', 'url');
    await createGuard({ allowHosts: ['tools.internal'], resolve: resolving('10.0.0.7') }).checkSaved(
      'https://tools.internal/mcp',
      'url',
    );
  });

  it('checkSavedAll checks every URL of a save, and the first refused in order names its field', async () => {
    const resolve = async (host: string) => [
      { address: host.startsWith('bad') ? '10.0.0.7' : '93.184.216.34', family: 4 },
    ];
    const guard = createGuard({ allowHosts: [], resolve });
    await guard.checkSavedAll([
      ['https://good.example/', 'a'],
      ['https://good2.example/', 'b'],
    ]);
    await guard.checkSavedAll([]);
    await expect(
      guard.checkSavedAll([
        ['https://good.example/', 'a'],
        ['https://bad1.example/', 'b'],
        ['https://bad2.example/', 'c'],
      ]),
    ).rejects.toThrow(/^b: refused by the outbound guard: bad1\.example/);
    // A name that does not answer in time is accepted beside the others, as checkSaved alone accepts it.
    const slow = createGuard({
      allowHosts: [],
      saveResolveMs: 50,
      resolve: (host: string) => (host.startsWith('slow') ? new Promise<never>(() => undefined) : resolve(host)),
    });
    await slow.checkSavedAll([
      ['https://slow1.example/', 'a'],
      ['https://slow2.example/', 'b'],
      ['https://good.example/', 'c'],
    ]);
  });
});
