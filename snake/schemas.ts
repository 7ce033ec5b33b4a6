import { z } from 'zod';
import { EndReason, Heading, SnakeState } from './state.js';

/*
 * Request and response shapes of the snake API. Routes validate bodies with these, the route helper
 * checks responses with them, and tests parse responses with them, so a shape is defined in one place.
 */

/** `POST /api/reset`: optional board size; no body means 16x16. */
export { BoardSize as ResetBody } from './state.js';

/** `POST /api/fruit`: the coordinates must lie on the posted state's board. */
export const FruitBody = z
  .object({
    state: SnakeState,
    x: z.int().meta({ description: 'column, 0-based' }),
    y: z.int().meta({ description: 'row, 0-based, growing down' }),
  })
  .superRefine((b, ctx) => {
    for (const [axis, max] of [
      ['x', b.state.width],
      ['y', b.state.height],
    ] as const) {
      if (b[axis] < 0 || b[axis] >= max) {
        ctx.addIssue({ code: 'custom', path: [axis], message: `${b[axis]} is outside the board (0..${max - 1})` });
      }
    }
  })
  .meta({ id: 'SnakeFruitBody' });
export type FruitBody = z.infer<typeof FruitBody>;

/** `POST /api/tick`: `visible: false` (tab hidden) pauses without calling the agent. */
export const TickBody = z
  .object({
    state: SnakeState,
    visible: z.boolean().default(true).meta({ description: 'false when the page is hidden; no agent call is made' }),
  })
  .meta({ id: 'SnakeTickBody' });
export type TickBody = z.infer<typeof TickBody>;

/** Why the agent's answer was not used; absent when it was. */
export const AgentFailure = z.enum([
  'not_configured',
  'timeout',
  'upstream_error',
  'job_failed',
  'invalid_answer',
  'reversal',
]);
export type AgentFailure = z.infer<typeof AgentFailure>;

/**
 * What steered this tick. `source: 'fallback'` always carries `failure` and a readable `reason` that
 * names the heading applied, so a failed agent call is never silent.
 */
export const Decision = z
  .object({
    source: z.enum(['agent', 'fallback']),
    heading: Heading.meta({ description: 'the heading applied this tick' }),
    raw: z.string().max(200).optional().meta({ description: "the agent's reply text, truncated" }),
    failure: AgentFailure.optional(),
    reason: z.string().optional().meta({ description: 'why the fallback was used and what it chose' }),
    latency_ms: z.int().min(0),
    job_id: z.string().optional(),
  })
  .meta({ id: 'SnakeDecision' });
export type Decision = z.infer<typeof Decision>;

/** `POST /api/tick` response, told apart by `outcome`. */
export const TickResult = z
  .discriminatedUnion('outcome', [
    z.object({ outcome: z.literal('moved'), state: SnakeState, decision: Decision, ate: z.boolean() }),
    z.object({ outcome: z.literal('paused'), state: SnakeState, reason: z.literal('hidden') }),
    z.object({
      outcome: z.literal('ended'),
      state: SnakeState,
      reason: EndReason,
      decision: Decision.optional().meta({ description: 'present when this tick ended the game' }),
    }),
  ])
  .meta({ id: 'SnakeTickResult' });
export type TickResult = z.infer<typeof TickResult>;

/** `GET /api/health`: the service is up; `agent_configured` is false when no platform key is set. */
/** Who decides each tick, so the page can say it. */
const Decider = z
  .discriminatedUnion('target', [
    z.object({
      target: z.literal('pathway'),
      id: z.string(),
      name: z.string().optional(),
      uses: z.enum(['rules', 'model', 'unknown']),
    }),
    z.object({ target: z.literal('neuron'), name: z.string(), uses: z.literal('model') }),
  ])
  .meta({ id: 'SnakeDecider' });
export const Health = z
  .object({
    ok: z.boolean(),
    agent_configured: z.boolean(),
    decider: Decider.optional().meta({ description: 'absent without a platform key' }),
  })
  .meta({ id: 'SnakeHealth' });
export type Health = z.infer<typeof Health>;

/** Every error body. */
export const ErrorBody = z.object({ message: z.string(), code: z.string() }).meta({ id: 'SnakeError' });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Turns the first issue of a ZodError into "state.snake[2]: message", the form every 400 uses. */
export function formatIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.reduce<string>(
    (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
    '',
  );
  const message =
    issue.code === 'invalid_type' && /received undefined$/.test(issue.message)
      ? `is required (expected ${issue.expected})`
      : issue.message;
  return path ? `${path}: ${message}` : message;
}
