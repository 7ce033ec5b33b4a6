import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBreakers, withinProbeTimeout } from '../../src/kernel/breakers.js';

/**
 * A dependency in a process of its own (as the store, Redis and Temporal are): a loopback server that
 * answers `ping` with `pong` at once and never answers anything else. It must not share this
 * process's event loop, which the tests keep busy.
 */
const SERVER = `
const s = require('node:net').createServer((c) => c.on('data', (b) => { if (String(b) === 'ping') c.write('pong'); }));
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
`;
let child: ChildProcess;
let port = 0;
const sockets: Socket[] = [];

beforeAll(async () => {
  child = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  port = await new Promise<number>((resolve) => child.stdout!.once('data', (b) => resolve(Number(String(b).trim()))));
});
afterAll(() => {
  for (const s of sockets) s.destroy();
  child.kill();
});

/** A connected socket, ready to send a ping on at once (as a client's pooled connection is). */
async function open(): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  sockets.push(s);
  await new Promise<void>((r) => s.once('connect', () => r()));
  return s;
}

/** Sends now (synchronously) and settles when the answer is read. */
function send(s: Socket, what: 'ping' | 'hang'): Promise<string> {
  const answer = new Promise<string>((resolve) => s.once('data', (b) => resolve(String(b))));
  s.write(what);
  return answer;
}

/** Keeps this process's event loop busy for `ms` (another tenant's burst in the same process). */
function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    /* spin */
  }
}

describe('withinProbeTimeout', () => {
  it('an answer received while the event loop was busy past the timeout still counts', async () => {
    const s = await open();
    const p = withinProbeTimeout(send(s, 'ping'), 100);
    // The answer arrives within a millisecond or two, unread: the loop is busy for 300 ms, so the
    // timer has expired too by the time the loop turns again.
    busy(300);
    await expect(p).resolves.toBe('pong');
  });

  it('a dependency that does not answer is judged late', async () => {
    const s = await open();
    const t0 = Date.now();
    await expect(withinProbeTimeout(send(s, 'hang'), 100)).rejects.toThrow('no answer within 100 ms');
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});

describe('createBreakers', () => {
  it('a busy event loop does not open a breaker whose dependency answered in time', async () => {
    const s = await open();
    const breakers = createBreakers(
      { mongodb: () => send(s, 'ping'), redis: async () => 'pong', temporal: async () => 'pong' },
      { intervalMs: 60_000, timeoutMs: 100 },
    );
    const probing = breakers.probeNow('mongodb');
    busy(300);
    await probing;
    expect(breakers.isOpen('mongodb')).toBe(false);
  });

  it('a stalled dependency opens its breaker, and its next answer closes it', async () => {
    const s = await open();
    let stalled = true;
    const breakers = createBreakers(
      { mongodb: () => send(s, stalled ? 'hang' : 'ping'), redis: async () => 'pong', temporal: async () => 'pong' },
      { intervalMs: 60_000, timeoutMs: 100 },
    );
    await breakers.probeNow('mongodb');
    expect(breakers.isOpen('mongodb')).toBe(true);
    expect(breakers.state('mongodb').reason).toBe('no answer within 100 ms');
    stalled = false;
    await breakers.probeNow('mongodb');
    expect(breakers.isOpen('mongodb')).toBe(false);
  });
});
