import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kernel/config.js';
import { keySlot, redirection, redisTarget, sameSlot } from '../../src/kernel/redis.js';

/** Which Redis the configuration names (docs/scaling.md): one server or a cluster, and keys that share a slot. */
const target = (env: Record<string, string>) => redisTarget(loadConfig(env));

describe('the Redis topology from the configuration', () => {
  it('REDIS_URL alone is one server; an empty REDIS_CLUSTER_NODES counts as unset', () => {
    expect(target({ REDIS_URL: 'redis://r:6380/2' })).toEqual({ topology: 'single', url: 'redis://r:6380/2' });
    expect(target({ REDIS_CLUSTER_NODES: '' })).toEqual({ topology: 'single', url: 'redis://127.0.0.1:6379' });
  });

  it('REDIS_CLUSTER_NODES names seed nodes and wins over REDIS_URL', () => {
    expect(target({ REDIS_URL: 'redis://ignored:1', REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-2:7001' })).toEqual({
      topology: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-2', port: 7001 },
      ],
      tls: false,
    });
    expect(() => target({ REDIS_CLUSTER_NODES: 'redis-1' })).toThrow(/REDIS_CLUSTER_NODES: comma-separated host:port/);
  });

  it('a redis+cluster:// URL is a cluster, with credentials and TLS (rediss+cluster://)', () => {
    expect(target({ REDIS_URL: 'redis+cluster://a:7000,b:7001' })).toEqual({
      topology: 'cluster',
      nodes: [
        { host: 'a', port: 7000 },
        { host: 'b', port: 7001 },
      ],
      tls: false,
    });
    expect(target({ REDIS_URL: 'rediss+cluster://app:p%40ss@a:7000,[::1]:7001/' })).toEqual({
      topology: 'cluster',
      nodes: [
        { host: 'a', port: 7000 },
        { host: '::1', port: 7001 },
      ],
      username: 'app',
      password: 'p@ss',
      tls: true,
    });
    expect(() => target({ REDIS_URL: 'redis+cluster://' })).toThrow(/REDIS_URL: a cluster URL is/);
  });

  it('a key prefix with a hash tag is refused (it would put every key in one slot)', () => {
    expect(() => loadConfig({ REDIS_PREFIX: 'app{1}:' })).toThrow(/REDIS_PREFIX: must not contain/);
  });

  it("keySlot is Redis's: CRC16 (XMODEM) of the hash tag or the whole key, mod 16384", () => {
    // CRC16/XMODEM's check value for "123456789" is 0x31C3; the others are what CLUSTER KEYSLOT answers.
    expect(keySlot('123456789')).toBe(0x31c3);
    expect([keySlot('foo'), keySlot('hello')]).toEqual([12182, 866]);
    expect(keySlot('{user1000}.following')).toBe(keySlot('user1000'));
    expect(keySlot('a{}b')).not.toBe(keySlot(''));
  });

  it('sameSlot names a companion key hashed like the key itself; a key with a hash tag of its own is refused', () => {
    expect(sameSlot('cortex:stream:job:42', 'meta')).toBe('{cortex:stream:job:42}:meta');
    expect(keySlot(sameSlot('cortex:stream:job:42', 'meta'))).toBe(keySlot('cortex:stream:job:42'));
    expect(() => sameSlot('cortex:{x}:job', 'meta')).toThrow(/hash tag of its own/);
  });
});

describe('redirections a blocking reader follows', () => {
  it('MOVED and ASK name the node to read from; any other error is none', () => {
    const err = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });
    expect(redirection(err('MOVED 663 127.0.0.1:34109'))).toEqual({ kind: 'MOVED', host: '127.0.0.1', port: 34109 });
    expect(redirection(err('ASK 14110 10.0.0.2:6379'))).toEqual({ kind: 'ASK', host: '10.0.0.2', port: 6379 });
    expect(redirection(err('MOVED 1 ::1:7000'))).toEqual({ kind: 'MOVED', host: '::1', port: 7000 });
    expect(redirection(err('CLUSTERDOWN The cluster is down'))).toBeNull();
    expect(redirection(err('TRYAGAIN Multiple keys request during rehashing of slot'))).toBeNull();
    expect(redirection(undefined)).toBeNull();
  });
});
