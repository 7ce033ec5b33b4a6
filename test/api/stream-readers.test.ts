import { randomUUID } from 'node:crypto';
import type { Redis as SingleRedis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { blockingReader } from '../../src/kernel/redis.js';
import { usePlatform } from '../support/platform.js';

/**
 * The blocking connections of stream followers (src/kernel/redis.ts, BlockingReader.release): a follow
 * that ends with no read pending leaves its connection for the next follow, so sequential job streams
 * do not each pay a connection, its handshake and its ready check; a follow aborted while its read is
 * blocked closes its connection, which is never handed on. Against the real Redis server; the
 * connections are counted where this process makes them (the command client's `duplicate`), since
 * other test files share the server.
 */
const { app } = usePlatform();
afterEach(() => vi.restoreAllMocks());

/** Watches the blocking connections this process makes from now on. */
function watchConnections(): SingleRedis[] {
  const made: SingleRedis[] = [];
  const redis = app.deps.redis as SingleRedis;
  const original = redis.duplicate.bind(redis);
  vi.spyOn(redis, 'duplicate').mockImplementation((...args: Parameters<SingleRedis['duplicate']>) => {
    const c = original(...args);
    made.push(c);
    return c;
  });
  return made;
}

/** Follows `key` until its first blocking read passes empty, then ends (what a finished job's stream does). */
async function followUntilIdle(key: string, signal = new AbortController().signal, blockMs = 30): Promise<string[]> {
  const seen: string[] = [];
  await app.deps.streams.follow(key, {
    endOnTerminal: false,
    blockMs,
    signal,
    onEntry: (e) => void seen.push(e.id),
    onIdle: () => 'finished',
  });
  return seen;
}

describe('stream followers keep their blocking connection for the next follow', () => {
  it('ten follows in turn open no new connection, and each sees its own stream whole', async () => {
    await followUntilIdle(`test:readers:${randomUUID()}`); // one idle connection to start from
    const made = watchConnections();
    for (let i = 0; i < 10; i++) {
      const key = `test:readers:${randomUUID()}`;
      const ids = [await app.deps.streams.append(key, { n: 1 }), await app.deps.streams.append(key, { n: 2 })];
      // An entry written while the follower blocks arrives on the reused connection.
      const following = followUntilIdle(key, undefined, 300);
      await new Promise((r) => setTimeout(r, 50));
      ids.push(await app.deps.streams.append(key, { n: 3 }));
      expect(await following).toEqual(ids);
    }
    expect(made).toHaveLength(0);
  });

  it('a follow aborted while its read blocks closes its connection, and the next follow reads on a fresh one', async () => {
    const key = `test:readers:${randomUUID()}`;
    await followUntilIdle(key);
    // Ten blocked at once: the idle connection serves one, nine are new.
    const made = watchConnections();
    const abort = new AbortController();
    const blocked = Array.from({ length: 10 }, () => followUntilIdle(key, abort.signal, 10_000));
    await new Promise((r) => setTimeout(r, 100));
    expect(made).toHaveLength(9);
    abort.abort();
    await Promise.all(blocked);
    // Every aborted connection is closed, and none is kept: the next follow makes a new one.
    await expect.poll(() => made.every((c) => c.status === 'end'), { timeout: 5000 }).toBe(true);
    const id = await app.deps.streams.append(key, { after: 'abort' });
    expect(await followUntilIdle(key)).toContain(id);
    expect(made).toHaveLength(10);
  });

  it('a reader closed between two reads (its client gone while an entry is delivered) is not handed on', async () => {
    const key = `test:readers:${randomUUID()}`;
    const id = await app.deps.streams.append(key, { n: 1 });
    const first = blockingReader(app.deps.redis, key);
    expect(await first.xread('COUNT', 1, 'STREAMS', key, '0-0')).not.toBeNull();
    // Closed with no read pending, then released at once: its socket is still closing.
    first.disconnect();
    first.release();
    const next = blockingReader(app.deps.redis, key);
    const reply = await next.xread('COUNT', 1, 'STREAMS', key, '0-0');
    expect(reply?.[0]?.[1]?.[0]?.[0]).toBe(id);
    next.release();
  });
});
