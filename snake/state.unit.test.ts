import { describe, expect, it } from 'vitest';
import { FruitBody, formatIssue } from './schemas.js';
import { fallbackHeading, isReversal, isSafe, reset, SnakeState, step, toggleFruit, type Cell } from './state.js';

/** A running state from a few fields; the rest as after reset. */
function state(over: Partial<Extract<SnakeState, { status: 'running' }>>): SnakeState {
  return SnakeState.parse({ ...reset({ width: 8, height: 8 }), ...over });
}
const cells = (...xy: [number, number][]): Cell[] => xy.map(([x, y]) => ({ x, y }));

function firstError(input: unknown): string {
  const r = SnakeState.safeParse(input);
  expect(r.success).toBe(false);
  return formatIssue(r.error!.issues[0]);
}

describe('reset', () => {
  it('makes a 3-cell snake in the middle heading right, no fruit, tick 0', () => {
    const s = reset();
    expect(s).toEqual({
      width: 16,
      height: 16,
      snake: cells([8, 8], [7, 8], [6, 8]),
      heading: 'right',
      fruit: null,
      score: 0,
      tick: 0,
      status: 'running',
    });
    expect(SnakeState.parse(s)).toEqual(s);
  });

  it('honours a board size and rejects a too small one', () => {
    expect(reset({ width: 5, height: 4 }).snake[0]).toEqual({ x: 2, y: 2 });
    expect(() => reset({ width: 3, height: 8 })).toThrow();
  });
});

describe('SnakeState validation', () => {
  const ok = reset({ width: 8, height: 8 });

  it('accepts a fresh state', () => expect(SnakeState.safeParse(ok).success).toBe(true));

  it('rejects a cell off the board', () => {
    expect(firstError({ ...ok, snake: cells([8, 4], [7, 4], [6, 4]) })).toBe(
      'snake[0]: cell (8, 4) is off the 8x8 board',
    );
    expect(firstError({ ...ok, snake: cells([-1, 4]) })).toMatch(/^snake\[0\]\.x: /);
  });

  it('rejects a snake that is not contiguous', () => {
    expect(firstError({ ...ok, snake: cells([4, 4], [3, 4], [1, 4]) })).toBe(
      'snake[2]: cell (1, 4) is not next to (3, 4); the snake must be a contiguous chain, head first',
    );
    expect(firstError({ ...ok, snake: cells([4, 4], [3, 3]) })).toMatch(/not next to/); // diagonal
  });

  it('rejects a snake that overlaps itself', () => {
    expect(firstError({ ...ok, snake: cells([4, 4], [3, 4], [4, 4]) })).toMatch(
      /^snake\[2\]: cell \(4, 4\) appears twice/,
    );
  });

  it('rejects a heading into the neck', () => {
    expect(firstError({ ...ok, heading: 'left' })).toBe("heading: 'left' points into the snake's neck at (3, 4)");
  });

  it('rejects fruit off the board or under the snake', () => {
    expect(firstError({ ...ok, fruit: { x: 2, y: 9 } })).toBe('fruit: cell (2, 9) is off the 8x8 board');
    expect(firstError({ ...ok, fruit: { x: 3, y: 4 } })).toBe('fruit: cell (3, 4) is under the snake');
  });

  it('requires ended_reason exactly for ended games, and sane numbers', () => {
    expect(firstError({ ...ok, status: 'ended' })).toMatch(/^ended_reason: /);
    expect(firstError({ ...ok, status: 'won' })).toMatch(/^status: /);
    expect(firstError({ ...ok, score: -1 })).toMatch(/^score: /);
    expect(firstError({ ...ok, tick: 1.5 })).toMatch(/^tick: /);
    expect(firstError({ ...ok, width: 41 })).toMatch(/^width: /);
    expect(firstError({ ...ok, snake: [] })).toMatch(/^snake: /);
    const { heading: _h, ...noHeading } = ok;
    expect(firstError(noHeading)).toBe('heading: Invalid option: expected one of "up"|"down"|"left"|"right"');
    const { snake: _s, ...noSnake } = ok;
    expect(firstError(noSnake)).toBe('snake: is required (expected array)');
  });

  it('FruitBody rejects x or y outside the posted board', () => {
    const r = FruitBody.safeParse({ state: ok, x: 8, y: 0 });
    expect(r.success).toBe(false);
    expect(formatIssue(r.error!.issues[0])).toBe('x: 8 is outside the board (0..7)');
    expect(FruitBody.safeParse({ state: ok, x: 0, y: -1 }).success).toBe(false);
    expect(FruitBody.safeParse({ state: ok, x: 0.5, y: 1 }).success).toBe(false);
  });
});

describe('toggleFruit (at most one fruit; toggling always replaces the last one)', () => {
  const s = reset({ width: 8, height: 8 }); // snake (4,4) (3,4) (2,4)

  it('puts the fruit on an empty cell', () => {
    expect(toggleFruit(s, 6, 1).fruit).toEqual({ x: 6, y: 1 });
  });

  it('moves the fruit when another cell is toggled: the previous fruit disappears', () => {
    const once = toggleFruit(s, 6, 1);
    const twice = toggleFruit(once, 0, 7);
    expect(twice.fruit).toEqual({ x: 0, y: 7 });
    expect(twice).toEqual({ ...s, fruit: { x: 0, y: 7 } }); // nothing else changes
  });

  it('removes the fruit when its own cell is toggled, and puts it back on the next toggle', () => {
    const placed = toggleFruit(s, 6, 1);
    const removed = toggleFruit(placed, 6, 1);
    expect(removed.fruit).toBeNull();
    expect(toggleFruit(removed, 6, 1).fruit).toEqual({ x: 6, y: 1 });
  });

  it('rejects a snake cell or an off-board cell and leaves the state alone', () => {
    const placed = toggleFruit(s, 6, 1);
    expect(() => toggleFruit(placed, 3, 4)).toThrow('cell (3, 4) is occupied by the snake');
    expect(() => toggleFruit(placed, 8, 0)).toThrow('cell (8, 0) is off the 8x8 board');
    expect(placed.fruit).toEqual({ x: 6, y: 1 });
  });

  it('rejects a finished game', () => {
    const dead = SnakeState.parse({ ...s, status: 'ended', ended_reason: 'wall' });
    expect(() => toggleFruit(dead, 1, 1)).toThrow(/game has ended \(wall\)/);
  });
});

describe('step', () => {
  it('moves the head, drops the tail, counts the tick and records the heading', () => {
    const s = state({});
    const n = step(s, 'up');
    expect(n).toMatchObject({
      snake: cells([4, 3], [4, 4], [3, 4]),
      heading: 'up',
      tick: 1,
      score: 0,
      status: 'running',
    });
    expect(SnakeState.safeParse(n).success).toBe(true);
  });

  it('grows by one, scores one and consumes the fruit on eating; no fruit respawns', () => {
    const s = state({ fruit: { x: 5, y: 4 } });
    const n = step(s, 'right');
    expect(n).toMatchObject({ snake: cells([5, 4], [4, 4], [3, 4], [2, 4]), score: 1, fruit: null, status: 'running' });
  });

  it('keeps a fruit it does not reach', () => {
    expect(step(state({ fruit: { x: 0, y: 0 } }), 'down').fruit).toEqual({ x: 0, y: 0 });
  });

  it('ends with wall when the head would leave the board; the snake stays put', () => {
    const s = state({ snake: cells([7, 2], [6, 2], [5, 2]) });
    const n = step(s, 'right');
    expect(n).toMatchObject({ status: 'ended', ended_reason: 'wall', snake: s.snake, tick: 1 });
    expect(SnakeState.safeParse(n).success).toBe(true);
    expect(step(state({ snake: cells([3, 0], [3, 1]), heading: 'up' }), 'up')).toMatchObject({
      status: 'ended',
      ended_reason: 'wall',
    });
  });

  it('ends with self when the head runs into the body', () => {
    // head (2,2) heading down, body loops round so that 'left' hits (1,2)
    const s = state({ snake: cells([2, 2], [2, 1], [1, 1], [1, 2], [1, 3]), heading: 'down' });
    expect(step(s, 'left')).toMatchObject({ status: 'ended', ended_reason: 'self' });
  });

  it('lets the head move into the cell the tail is leaving, but not when eating keeps the tail', () => {
    const loop = cells([2, 2], [2, 1], [1, 1], [1, 2]); // tail (1,2) is left of the head
    expect(step(state({ snake: loop, heading: 'down' }), 'left')).toMatchObject({
      status: 'running',
      snake: cells([1, 2], [2, 2], [2, 1], [1, 1]),
    });
  });

  it('ends with full when the snake fills the board', () => {
    // serpentine over 4x4: the snake holds 15 cells, the fruit the 16th, right in front of the head
    const path: Cell[] = [];
    for (let y = 0; y < 4; y++) for (let i = 0; i < 4; i++) path.push({ x: y % 2 === 0 ? i : 3 - i, y });
    const s = SnakeState.parse({
      width: 4,
      height: 4,
      snake: path.slice(0, 15).reverse(),
      heading: 'left',
      fruit: path[15],
      score: 12,
      tick: 40,
      status: 'running',
    });
    const n = step(s, 'left');
    expect(n).toMatchObject({ status: 'ended', ended_reason: 'full', score: 13, fruit: null });
    expect(n.snake).toHaveLength(16);
    expect(SnakeState.safeParse(n).success).toBe(true);
  });

  it('refuses a reversal and a finished game', () => {
    expect(() => step(state({}), 'left')).toThrow(/reverses/);
    expect(() => step(SnakeState.parse({ ...reset(), status: 'ended', ended_reason: 'self' }), 'up')).toThrow(/ended/);
  });
});

describe('legality and fallback', () => {
  it('a reversal is a move into the neck; a one-cell snake has none', () => {
    const s = state({});
    expect(isReversal(s, 'left')).toBe(true);
    expect(['up', 'down', 'right'].map((h) => isReversal(s, h as 'up'))).toEqual([false, false, false]);
    expect(isReversal(state({ snake: cells([4, 4]) }), 'left')).toBe(false);
  });

  it('keeps the current heading when it is safe', () => {
    expect(fallbackHeading(state({}))).toBe('right');
  });

  it('turns to the first safe heading (up, right, down, left) when the current one is fatal', () => {
    expect(fallbackHeading(state({ snake: cells([7, 4], [6, 4], [5, 4]) }))).toBe('up');
    expect(fallbackHeading(state({ snake: cells([7, 0], [6, 0], [5, 0]) }))).toBe('down');
  });

  it('keeps the current heading when every move is fatal', () => {
    // corner (0,0) heading up, neck below, body to the right: up and left are walls, right is body
    const s = state({ snake: cells([0, 0], [0, 1], [1, 1], [1, 0], [2, 0]), heading: 'up' });
    expect(['up', 'right', 'down', 'left'].some((h) => isSafe(s, h as 'up'))).toBe(false);
    expect(fallbackHeading(s)).toBe('up');
  });
});
