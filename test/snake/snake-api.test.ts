import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DECISION_NEURON_NAME, DECISION_SYSTEM_PROMPT, ensureDecisionNeuron } from '../../snake/provision.js';
import { ErrorBody, Health, TickResult } from '../../snake/schemas.js';
import { reset, SnakeState, type Cell } from '../../snake/state.js';
import { startRealPlatform } from './support/real-platform.js';
import { snakeEnv, startSnake, type SnakeTestApp } from './support/snake-app.js';

/*
 * Every route and rule of the snake service over real HTTP: the real Koa app on port 0 talking to the
 * real platform on loopback (support/real-platform.ts), whose decision model is the scripted provider.
 */

let platform: Awaited<ReturnType<typeof startRealPlatform>>;
let app: SnakeTestApp;

beforeAll(async () => {
  platform = await startRealPlatform();
  app = await startSnake(snakeEnv(platform));
});
afterAll(async () => {
  await app?.close();
  await platform?.close();
});
beforeEach(() => {
  platform.invokes.length = 0;
  platform.script(() => ({ text: 'up' }));
});

const cells = (...xy: [number, number][]): Cell[] => xy.map(([x, y]) => ({ x, y }));
/** A valid running 8x8 state, snake (4,4)(3,4)(2,4) heading right unless overridden. */
const board = (over: Record<string, unknown> = {}) => SnakeState.parse({ ...reset({ width: 8, height: 8 }), ...over });

function expectError(res: { status: number; body: unknown }, status: number, code: string, message?: RegExp | string) {
  expect(res.status).toBe(status);
  const body = ErrorBody.parse(res.body);
  expect(body.code).toBe(code);
  if (message !== undefined) expect(body.message).toMatch(message);
  return body;
}

async function tick(state: unknown, extra: Record<string, unknown> = {}, target: SnakeTestApp = app) {
  const res = await target.post('/api/tick', { state, ...extra });
  expect(res.status, res.text).toBe(200);
  return TickResult.parse(res.body);
}

describe('GET /api/health', () => {
  it('answers ok and whether the agent is configured', async () => {
    const res = await app.get('/api/health');
    expect(res.status).toBe(200);
    expect(Health.parse(res.body)).toEqual({
      ok: true,
      agent_configured: true,
      decider: { target: 'neuron', name: 'snake-decider', uses: 'model' },
    });
  });
});

describe('POST /api/reset', () => {
  it('needs no body and returns a fresh 16x16 state', async () => {
    const res = await app.post('/api/reset');
    expect(res.status).toBe(200);
    const s = SnakeState.parse(res.body);
    expect(s).toEqual(reset());
    expect(s).toMatchObject({
      width: 16,
      height: 16,
      score: 0,
      tick: 0,
      status: 'running',
      fruit: null,
      heading: 'right',
    });
    expect(s.snake).toHaveLength(3);
  });

  it('accepts an empty JSON object and a board size', async () => {
    expect(SnakeState.parse((await app.post('/api/reset', {})).body)).toEqual(reset());
    const s = SnakeState.parse((await app.post('/api/reset', { width: 10, height: 6 })).body);
    expect([s.width, s.height, s.snake[0]]).toEqual([10, 6, { x: 5, y: 3 }]);
  });

  it('rejects a board that is too small or not an integer', async () => {
    expectError(await app.post('/api/reset', { width: 3 }), 400, 'VALIDATION_ERROR', /^width: /);
    expectError(await app.post('/api/reset', { height: 'big' }), 400, 'VALIDATION_ERROR', /^height: /);
  });
});

describe('POST /api/fruit (at most one fruit; toggling always replaces the last one)', () => {
  it('puts the fruit on an empty cell', async () => {
    const res = await app.post('/api/fruit', { state: board(), x: 6, y: 1 });
    expect(res.status).toBe(200);
    expect(SnakeState.parse(res.body).fruit).toEqual({ x: 6, y: 1 });
  });

  it('replaces the previous fruit when another cell is toggled; nothing else changes', async () => {
    const first = SnakeState.parse((await app.post('/api/fruit', { state: board(), x: 6, y: 1 })).body);
    const second = SnakeState.parse((await app.post('/api/fruit', { state: first, x: 0, y: 7 })).body);
    expect(second).toEqual({ ...board(), fruit: { x: 0, y: 7 } });
  });

  it('removes the fruit when the cell holding it is toggled', async () => {
    const placed = SnakeState.parse((await app.post('/api/fruit', { state: board(), x: 6, y: 1 })).body);
    const removed = SnakeState.parse((await app.post('/api/fruit', { state: placed, x: 6, y: 1 })).body);
    expect(removed.fruit).toBeNull();
    expect(removed).toEqual(board());
  });

  it('rejects a snake cell with 400', async () => {
    expectError(
      await app.post('/api/fruit', { state: board(), x: 3, y: 4 }),
      400,
      'VALIDATION_ERROR',
      'cell (3, 4) is occupied by the snake',
    );
  });

  it('rejects x or y out of range, missing or not an integer', async () => {
    expectError(
      await app.post('/api/fruit', { state: board(), x: 8, y: 0 }),
      400,
      'VALIDATION_ERROR',
      'x: 8 is outside the board (0..7)',
    );
    expectError(
      await app.post('/api/fruit', { state: board(), x: 0, y: -1 }),
      400,
      'VALIDATION_ERROR',
      'y: -1 is outside the board (0..7)',
    );
    expectError(
      await app.post('/api/fruit', { state: board(), x: 1 }),
      400,
      'VALIDATION_ERROR',
      'y: is required (expected number)',
    );
    expectError(await app.post('/api/fruit', { state: board(), x: 1.5, y: 2 }), 400, 'VALIDATION_ERROR', /^x: /);
    expectError(
      await app.post('/api/fruit', { x: 1, y: 2 }),
      400,
      'VALIDATION_ERROR',
      'state: is required (expected object)',
    );
  });

  it('rejects a finished game with 409', async () => {
    const ended = { ...board(), status: 'ended', ended_reason: 'wall' };
    expectError(await app.post('/api/fruit', { state: ended, x: 1, y: 1 }), 409, 'GAME_ENDED', /reset to play again/);
  });
});

describe('impossible states are 400 on every route that takes one', () => {
  const bad: [string, Record<string, unknown>, string | RegExp][] = [
    [
      'a cell off the board',
      { snake: cells([8, 4], [7, 4], [6, 4]) },
      'state.snake[0]: cell (8, 4) is off the 8x8 board',
    ],
    ['a negative coordinate', { snake: cells([-1, 4]) }, /^state\.snake\[0\]\.x: /],
    [
      'a snake that is not contiguous',
      { snake: cells([4, 4], [3, 4], [1, 4]) },
      'state.snake[2]: cell (1, 4) is not next to (3, 4); the snake must be a contiguous chain, head first',
    ],
    [
      'a snake that overlaps itself',
      { snake: cells([4, 4], [3, 4], [4, 4]) },
      /^state\.snake\[2\]: cell \(4, 4\) appears twice/,
    ],
    ['a heading into the neck', { heading: 'left' }, "state.heading: 'left' points into the snake's neck at (3, 4)"],
    ['fruit under the snake', { fruit: { x: 2, y: 4 } }, 'state.fruit: cell (2, 4) is under the snake'],
    ['an unknown heading', { heading: 'north' }, /^state\.heading: Invalid option/],
    ['an ended game without a reason', { status: 'ended' }, /^state\.ended_reason: /],
    ['a negative score', { score: -2 }, /^state\.score: /],
  ];
  it.each(bad)('%s', async (_name, over, message) => {
    const state = { ...reset({ width: 8, height: 8 }), ...over };
    expectError(await app.post('/api/tick', { state }), 400, 'VALIDATION_ERROR', message);
    expectError(await app.post('/api/fruit', { state, x: 0, y: 0 }), 400, 'VALIDATION_ERROR', message);
    expect(platform.invokes).toHaveLength(0);
  });

  it('a body that is not JSON, or not an object', async () => {
    expectError(
      await app.postRaw('/api/tick', 'application/json', '{"state": '),
      400,
      'VALIDATION_ERROR',
      'the request body is not valid JSON',
    );
    expectError(
      await app.postRaw('/api/tick', 'application/json', '[1,2]'),
      400,
      'VALIDATION_ERROR',
      /expected object/,
    );
    expectError(
      await app.postRaw('/api/tick', 'text/plain', 'hello'),
      400,
      'VALIDATION_ERROR',
      'state: is required (expected object)',
    );
    expectError(await app.post('/api/tick', { state: board(), visible: 'no' }), 400, 'VALIDATION_ERROR', /^visible: /);
  });
});

describe('POST /api/tick', () => {
  it('asks the agent with the state as data and applies its heading', async () => {
    platform.script(() => ({ text: 'up' }));
    const state = board();
    const r = await tick(state);
    expect(r.outcome).toBe('moved');
    if (r.outcome !== 'moved') return;
    expect(r.decision).toMatchObject({ source: 'agent', heading: 'up', raw: 'up' });
    expect(r.decision.failure).toBeUndefined();
    expect(r.decision.latency_ms).toBeGreaterThanOrEqual(0);
    expect(r.state).toMatchObject({ snake: cells([4, 3], [4, 4], [3, 4]), heading: 'up', tick: 1, score: 0 });
    expect(r.ate).toBe(false);
    expect(platform.invokes).toHaveLength(1);
    expect(platform.invokes[0].data).toEqual(state);
    expect(platform.invokes[0].message).toMatch(/one word: up, down, left or right/);
  });

  it('reads a heading inside JSON, any case', async () => {
    platform.script(() => ({ text: '{"heading":"DOWN"}' }));
    const r = await tick(board());
    expect(r.outcome === 'moved' && r.decision).toMatchObject({ source: 'agent', heading: 'down' });
  });

  it('waits for a job that takes a few polls', async () => {
    platform.script(() => ({ text: 'right', delayMs: 150 }));
    const r = await tick(board());
    expect(r.outcome === 'moved' && r.decision).toMatchObject({ source: 'agent', heading: 'right' });
    expect(r.outcome === 'moved' && r.decision.latency_ms).toBeGreaterThanOrEqual(140);
  });

  it('eats: grows, scores one and consumes the fruit', async () => {
    platform.script(() => ({ text: 'right' }));
    const r = await tick(board({ fruit: { x: 5, y: 4 }, score: 2 }));
    expect(r.outcome).toBe('moved');
    expect(r.outcome === 'moved' && r.ate).toBe(true);
    expect(r.state).toMatchObject({ score: 3, fruit: null, snake: cells([5, 4], [4, 4], [3, 4], [2, 4]) });
  });

  it('visible: false pauses and makes no agent call', async () => {
    const state = board({ fruit: { x: 5, y: 4 } });
    const r = await tick(state, { visible: false });
    expect(r).toEqual({ outcome: 'paused', state, reason: 'hidden' });
    expect(platform.invokes).toHaveLength(0);
  });

  describe('the agent failing is handled visibly with a safe fallback', () => {
    it('an answer that is not a heading keeps the current heading when safe', async () => {
      platform.script(() => ({ text: 'diagonal, obviously' }));
      const r = await tick(board());
      expect(r.outcome).toBe('moved');
      if (r.outcome !== 'moved') return;
      expect(r.decision).toMatchObject({
        source: 'fallback',
        heading: 'right',
        failure: 'invalid_answer',
        raw: 'diagonal, obviously',
      });
      expect(r.decision.reason).toBe('the reply is not one of up, down, left, right; kept heading right');
      expect(r.state.snake[0]).toEqual({ x: 5, y: 4 });
    });

    it('an ambiguous answer (two headings) is not guessed', async () => {
      platform.script(() => ({ text: 'up or down' }));
      const r = await tick(board());
      expect(r.outcome === 'moved' && r.decision).toMatchObject({
        source: 'fallback',
        failure: 'invalid_answer',
        heading: 'right',
      });
    });

    it('a reversal into the neck is illegal', async () => {
      platform.script(() => ({ text: 'left' }));
      const r = await tick(board());
      expect(r.outcome === 'moved' && r.decision).toMatchObject({
        source: 'fallback',
        heading: 'right',
        failure: 'reversal',
        raw: 'left',
        reason: 'agent chose left, a reversal into the neck; kept heading right',
      });
    });

    it('turns to a safe heading when keeping the current one would hit the wall', async () => {
      platform.script(() => ({ text: '???' }));
      const r = await tick(board({ snake: cells([7, 4], [6, 4], [5, 4]) }));
      expect(r.outcome).toBe('moved');
      expect(r.outcome === 'moved' && r.decision).toMatchObject({
        source: 'fallback',
        heading: 'up',
        reason: 'the reply is not one of up, down, left, right; heading right was unsafe, turned up',
      });
    });

    it('a timeout falls back within the configured deadline', async () => {
      platform.script(() => ({ hang: true }));
      const started = Date.now();
      const r = await tick(board());
      expect(Date.now() - started).toBeLessThan(4500);
      expect(r.outcome === 'moved' && r.decision).toMatchObject({
        source: 'fallback',
        failure: 'timeout',
        heading: 'right',
        reason: 'no answer within 3000 ms; kept heading right',
      });
      expect(r.outcome === 'moved' && r.decision.job_id).toEqual(expect.any(String));
    });

    it('a failed job falls back and says why', async () => {
      platform.script(() => ({ fail: 'model overloaded' }));
      const r = await tick(board());
      expect(r.outcome === 'moved' && r.decision).toMatchObject({
        source: 'fallback',
        failure: 'job_failed',
        reason: expect.stringMatching(/^decision job failed: .*model overloaded; kept heading right$/),
      });
    });

    it('an upstream HTTP error falls back and says what the platform answered', async () => {
      // The real API answers 404 to an invoke of a neuron that does not exist.
      const lost = await startSnake(snakeEnv({ ...platform, neuron: 'no-such-neuron' }));
      try {
        const r = await tick(board(), {}, lost);
        expect(r.outcome === 'moved' && r.decision).toMatchObject({
          source: 'fallback',
          failure: 'upstream_error',
          reason: 'platform answered 404 to invoke: Neuron not found; kept heading right',
        });
      } finally {
        await lost.close();
      }
    });

    it('an unreachable platform falls back', async () => {
      const port = await closedPort();
      const down = await startSnake(snakeEnv(platform, { CORTEX_API_URL: `http://127.0.0.1:${port}` }));
      try {
        const r = await tick(board(), {}, down);
        expect(r.outcome === 'moved' && r.decision).toMatchObject({
          source: 'fallback',
          failure: 'upstream_error',
          reason: 'platform unreachable (ECONNREFUSED); kept heading right',
        });
      } finally {
        await down.close();
      }
    });

    it('a service without a key says so, in health and in every decision, and calls nobody', async () => {
      const bare = await startSnake(snakeEnv(platform, { CORTEX_API_KEY: undefined }));
      try {
        expect(Health.parse((await bare.get('/api/health')).body)).toEqual({ ok: true, agent_configured: false });
        const r = await tick(board(), {}, bare);
        expect(r.outcome === 'moved' && r.decision).toMatchObject({
          source: 'fallback',
          failure: 'not_configured',
          reason: 'CORTEX_API_KEY is not set on the snake service; kept heading right',
        });
        expect(platform.invokes).toHaveLength(0);
      } finally {
        await bare.close();
      }
    });
  });

  describe('ended results', () => {
    it('wall: the agent steers off the board', async () => {
      platform.script(() => ({ text: 'right' }));
      const state = board({ snake: cells([7, 4], [6, 4], [5, 4]) });
      const r = await tick(state);
      expect(r.outcome).toBe('ended');
      if (r.outcome !== 'ended') return;
      expect(r.reason).toBe('wall');
      expect(r.decision).toMatchObject({ source: 'agent', heading: 'right' });
      expect(r.state).toMatchObject({ status: 'ended', ended_reason: 'wall', snake: state.snake, tick: 1 });
    });

    it('self: the agent steers into the body', async () => {
      platform.script(() => ({ text: 'left' }));
      const r = await tick(board({ snake: cells([2, 2], [2, 1], [1, 1], [1, 2], [1, 3]), heading: 'down' }));
      expect(r).toMatchObject({ outcome: 'ended', reason: 'self', state: { status: 'ended', ended_reason: 'self' } });
    });

    it('full: eating the last free cell fills the board', async () => {
      const path: Cell[] = [];
      for (let y = 0; y < 4; y++) for (let i = 0; i < 4; i++) path.push({ x: y % 2 === 0 ? i : 3 - i, y });
      const state = {
        width: 4,
        height: 4,
        snake: path.slice(0, 15).reverse(),
        heading: 'left',
        fruit: path[15],
        score: 12,
        tick: 30,
        status: 'running',
      };
      platform.script(() => ({ text: 'left' }));
      const r = await tick(state);
      expect(r).toMatchObject({
        outcome: 'ended',
        reason: 'full',
        state: { score: 13, fruit: null, status: 'ended', ended_reason: 'full' },
      });
      expect(r.state.snake).toHaveLength(16);
    });

    it('an already ended game stays ended and calls no agent, visible or not', async () => {
      const state = board({ status: 'ended', ended_reason: 'self' });
      expect(await tick(state)).toEqual({ outcome: 'ended', state, reason: 'self' });
      expect(await tick(state, { visible: false })).toEqual({ outcome: 'ended', state, reason: 'self' });
      expect(platform.invokes).toHaveLength(0);
    });
  });
});

describe('errors and the page', () => {
  it('unknown API routes are 404 { message, code }; wrong methods 405', async () => {
    expectError(await app.get('/api/nope'), 404, 'NOT_FOUND', 'route GET /api/nope not found');
    expectError(await app.get('/api/tick'), 405, 'METHOD_NOT_ALLOWED');
  });

  it('serves the page, its script and style same-origin with a strict CSP', async () => {
    const page = await app.get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('<canvas id="board"');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
    const js = await app.get('/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await app.get('/style.css')).status).toBe(200);
    expectError(await app.get('/config.ts'), 404, 'NOT_FOUND');
    expectError(await app.get('/../snake/config.ts'), 404, 'NOT_FOUND');
  });
});

describe('the upstream key never leaves the server', () => {
  it('appears in no response body or header, on any route or failure path, nor in the logs', async () => {
    const key = platform.apiKey;
    const state = board({ fruit: { x: 6, y: 4 } });
    // Happy paths
    await app.get('/api/health');
    await app.post('/api/reset');
    await app.post('/api/fruit', { state, x: 1, y: 1 });
    await app.post('/api/tick', { state });
    await app.post('/api/tick', { state, visible: false });
    for (const path of ['/', '/index.html', '/app.js', '/style.css', '/nope', '/api/nope']) await app.get(path);
    // Validation failures
    await app.post('/api/fruit', { state, x: 99, y: 1 });
    await app.post('/api/tick', { state: { ...state, heading: 'left' } });
    await app.postRaw('/api/tick', 'application/json', '{');
    // An upstream that echoes the key back in every way it can
    platform.script(() => ({ text: `up, my key is ${key}` }));
    await app.post('/api/tick', { state });
    platform.script(() => ({ text: `nonsense ${key}` }));
    await app.post('/api/tick', { state });
    platform.script(() => ({ fail: `provider rejected Bearer ${key}` }));
    await app.post('/api/tick', { state });
    platform.script(() => ({
      http: { status: 401, body: { message: `Invalid API key ${key}`, code: 'AUTH_REQUIRED' } },
    }));
    await app.post('/api/tick', { state });
    platform.script(() => ({ http: { status: 500, body: `<html>upstream crashed, auth=${key}</html>` } }));
    await app.post('/api/tick', { state });

    expect(app.exchanges.length).toBeGreaterThanOrEqual(19);
    const fallbacks = app.exchanges.map((e) => e.text).filter((t) => t.includes('[redacted]'));
    expect(fallbacks.length).toBeGreaterThanOrEqual(4); // the echoes reached the responses, scrubbed
    for (const ex of app.exchanges) {
      expect(ex.text).not.toContain(key);
      for (const [name, value] of ex.headers) expect(`${name}: ${value}`).not.toContain(key);
    }
    expect(app.logs.length).toBeGreaterThan(0);
    for (const line of app.logs) expect(line).not.toContain(key);
  });
});

describe('ensureDecisionNeuron (called by npm run up)', () => {
  const opts = () => ({
    apiUrl: platform.apiUrl,
    apiKey: platform.apiKey,
    brainId: platform.brainId,
    model: 'openai/gpt-4o-mini',
  });

  it('is idempotent: the neuron created at start-up is found again, with its instructions', async () => {
    const again = await ensureDecisionNeuron(opts());
    expect(again).toMatchObject({ name: DECISION_NEURON_NAME, created: false, id: expect.any(String) });
    const res = await fetch(`${platform.apiUrl}/v1/neurons/${DECISION_NEURON_NAME}`, {
      headers: { authorization: `Bearer ${platform.apiKey}`, 'x-brain-id': platform.brainId },
    });
    expect(res.status).toBe(200);
    const stored = (await res.json()) as Record<string, unknown>;
    expect(stored).toMatchObject({
      id: again.id,
      name: 'snake-decider',
      brain_id: platform.brainId,
      neuron_config: { system_prompt: DECISION_SYSTEM_PROMPT, model: 'openai/gpt-4o-mini' },
    });
    expect(DECISION_SYSTEM_PROMPT).toMatch(/one word: up, down, left or right/);
    expect((await ensureDecisionNeuron(opts())).id).toBe(again.id);
  });

  it('throws on any other status, without the key in the message', async () => {
    const err = await ensureDecisionNeuron({ ...opts(), apiKey: `${platform.apiKey}-wrong` }).then(
      () => new Error('expected a rejection'),
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toMatch(/GET \/v1\/neurons\/snake-decider answered 401/);
    expect(err.message).not.toContain(platform.apiKey);
  });
});

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
