import { z } from 'zod';
import { gameEnded, validationError } from './errors.js';

/*
 * SnakeState and the pure game rules. The service keeps no game: the browser posts the whole state with
 * every call, so this schema is the only guard between a client and the rules, and every impossible
 * state (off-board cells, a broken or overlapping snake, a heading into the neck, fruit under the snake)
 * is rejected here with a message naming the field. Coordinates: x grows right, y grows down, (0,0) is
 * the top-left cell; `up` is y - 1.
 */

/** Smallest board side: room for the 3-cell starting snake plus a cell ahead of it. */
const MIN_SIDE = 4;
/** Largest board side, so a state body stays small (40x40 = 1600 cells at most). */
const MAX_SIDE = 40;
/** A fresh snake has this many cells; the score counts the cells grown since. */
const START_LENGTH = 3;

/** The four moves; the agent must answer one of these words. */
export const Heading = z.enum(['up', 'down', 'left', 'right']).meta({ description: 'direction of travel' });
export type Heading = z.infer<typeof Heading>;
/** Every heading in the fixed order the fallback tries them. */
export const HEADINGS: readonly Heading[] = ['up', 'right', 'down', 'left'];

/** One board cell; the upper bound is checked against the actual board by SnakeState. */
export const Cell = z
  .object({
    x: z
      .int()
      .min(0)
      .max(MAX_SIDE - 1),
    y: z
      .int()
      .min(0)
      .max(MAX_SIDE - 1),
  })
  .meta({ id: 'SnakeCell', description: 'a board cell; x grows right, y grows down' });
export type Cell = z.infer<typeof Cell>;

/** Why a game ended: the head left the board, hit the body, or the snake fills every cell. */
export const EndReason = z.enum(['wall', 'self', 'full']);
export type EndReason = z.infer<typeof EndReason>;

const Side = z.int().min(MIN_SIDE).max(MAX_SIDE);
const Common = z.object({
  width: Side.meta({ description: 'columns' }),
  height: Side.meta({ description: 'rows' }),
  snake: z
    .array(Cell)
    .min(1)
    .max(MAX_SIDE * MAX_SIDE)
    .meta({ description: 'cells, head first, each next to the previous' }),
  heading: Heading.meta({ description: 'direction of the last move; never into the neck' }),
  fruit: Cell.nullable().meta({ description: 'the single fruit, or null' }),
  score: z.int().min(0).meta({ description: 'fruits eaten' }),
  tick: z.int().min(0).meta({ description: 'moves made since reset' }),
});

/**
 * The whole game, carried by the client. A discriminated union so that `ended_reason` exists exactly when
 * the game has ended; `superRefine` adds the checks that depend on the board size.
 */
export const SnakeState = z
  .discriminatedUnion('status', [
    Common.extend({ status: z.literal('running') }),
    Common.extend({ status: z.literal('ended'), ended_reason: EndReason }),
  ])
  .superRefine((s, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const off = (c: Cell) => c.x >= s.width || c.y >= s.height;
    const seen = new Set<string>();
    for (const [i, c] of s.snake.entries()) {
      if (off(c)) return issue(['snake', i], `cell ${fmt(c)} is off the ${s.width}x${s.height} board`);
      if (seen.has(key(c))) return issue(['snake', i], `cell ${fmt(c)} appears twice; the snake cannot overlap itself`);
      seen.add(key(c));
      const prev = s.snake[i - 1];
      if (prev && !adjacent(prev, c)) {
        return issue(
          ['snake', i],
          `cell ${fmt(c)} is not next to ${fmt(prev)}; the snake must be a contiguous chain, head first`,
        );
      }
    }
    if (isReversal(s, s.heading)) {
      return issue(['heading'], `'${s.heading}' points into the snake's neck at ${fmt(s.snake[1])}`);
    }
    if (s.fruit && off(s.fruit))
      return issue(['fruit'], `cell ${fmt(s.fruit)} is off the ${s.width}x${s.height} board`);
    if (s.fruit && seen.has(key(s.fruit))) return issue(['fruit'], `cell ${fmt(s.fruit)} is under the snake`);
  })
  .meta({ id: 'SnakeState' });
export type SnakeState = z.infer<typeof SnakeState>;

/** Board size for a new game; both optional so `POST /api/reset` needs no body. */
export const BoardSize = z.object({
  width: Side.default(16),
  height: Side.default(16),
});
export type BoardSize = z.input<typeof BoardSize>;

const DELTA: Record<Heading, Cell> = {
  up: { x: 0, y: -1 },
  down: { x: 0, y: 1 },
  left: { x: -1, y: 0 },
  right: { x: 1, y: 0 },
};

/** The cell one step from `c`; may be off the board (that is how a wall hit is detected). */
function move(c: Cell, h: Heading): Cell {
  return { x: c.x + DELTA[h].x, y: c.y + DELTA[h].y };
}

/** Whether `h` would turn the head back into its neck, the one move that is never legal. */
export function isReversal(s: Pick<SnakeState, 'snake'>, h: Heading): boolean {
  const neck = s.snake[1];
  return neck !== undefined && same(move(s.snake[0], h), neck);
}

/**
 * A new game: a 3-cell snake in the middle heading right, body to its left, no fruit, tick 0. The
 * service never places fruit itself; the player does (see toggleFruit).
 */
export function reset(size: BoardSize = {}): SnakeState {
  const { width, height } = BoardSize.parse(size);
  const head = { x: Math.floor(width / 2), y: Math.floor(height / 2) };
  const snake = Array.from({ length: START_LENGTH }, (_, i) => ({ x: head.x - i, y: head.y }));
  return { width, height, snake, heading: 'right', fruit: null, score: 0, tick: 0, status: 'running' };
}

/**
 * The fruit rule. There is at most one fruit, and toggling always replaces the last one:
 * - toggling the cell that holds the fruit removes it (fruit becomes null);
 * - toggling any other free cell puts the fruit there, and the previous fruit (if any) disappears;
 * - toggling a snake cell, a cell off the board, or a finished game is rejected (400, 400, 409) and
 *   nothing changes.
 */
export function toggleFruit(s: SnakeState, x: number, y: number): SnakeState {
  if (s.status === 'ended') throw gameEnded(s.ended_reason);
  const cell = { x, y };
  if (!Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= s.width || y >= s.height) {
    throw validationError(`cell ${fmt(cell)} is off the ${s.width}x${s.height} board`);
  }
  if (s.snake.some((c) => same(c, cell))) throw validationError(`cell ${fmt(cell)} is occupied by the snake`);
  const fruit = s.fruit && same(s.fruit, cell) ? null : cell;
  return { ...s, fruit };
}

/**
 * One move. The head advances; on fruit the snake grows by one (tail stays), the score rises by one and
 * the fruit is consumed (none respawns); otherwise the tail follows, so moving into the cell the tail is
 * leaving is legal. Leaving the board ends the game with 'wall', running into the body with 'self'
 * (in both cases the snake stays where it was), and filling every cell ends it with 'full'. Every call,
 * including a fatal one, advances `tick` and sets `heading`.
 * Throws for a reversal: callers must pick a legal heading first (see fallbackHeading).
 */
export function step(s: SnakeState, h: Heading): SnakeState {
  if (s.status === 'ended') throw gameEnded(s.ended_reason);
  if (isReversal(s, h)) throw validationError(`'${h}' reverses into the snake's neck`);
  const head = move(s.snake[0], h);
  const base = { ...s, heading: h, tick: s.tick + 1 };
  if (head.x < 0 || head.y < 0 || head.x >= s.width || head.y >= s.height) {
    return { ...base, status: 'ended', ended_reason: 'wall' };
  }
  const eats = s.fruit !== null && same(s.fruit, head);
  const body = eats ? s.snake : s.snake.slice(0, -1);
  if (body.some((c) => same(c, head))) return { ...base, status: 'ended', ended_reason: 'self' };
  const snake = [head, ...body];
  const next = { ...base, snake, fruit: eats ? null : s.fruit, score: s.score + (eats ? 1 : 0) };
  return snake.length === s.width * s.height ? { ...next, status: 'ended', ended_reason: 'full' } : next;
}

/** Whether `h` is legal and does not end the game by wall or self (filling the board is fine). */
export function isSafe(s: SnakeState, h: Heading): boolean {
  if (s.status === 'ended' || isReversal(s, h)) return false;
  const next = step(s, h);
  return next.status === 'running' || next.ended_reason === 'full';
}

/**
 * The heading applied when the agent gives no usable answer: the current heading if it is safe, else the
 * first safe heading in HEADINGS order, else the current heading (every move is fatal; the current one is
 * never a reversal in a valid state).
 */
export function fallbackHeading(s: SnakeState): Heading {
  if (isSafe(s, s.heading)) return s.heading;
  return HEADINGS.find((h) => isSafe(s, h)) ?? s.heading;
}

/** "(x, y)" as used in every message, so errors and the page read the same. */
export function fmt(c: Cell): string {
  return `(${c.x}, ${c.y})`;
}
const key = (c: Cell) => `${c.x},${c.y}`;
const same = (a: Cell, b: Cell) => a.x === b.x && a.y === b.y;
const adjacent = (a: Cell, b: Cell) => Math.abs(a.x - b.x) + Math.abs(a.y - b.y) === 1;
