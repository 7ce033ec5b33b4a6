import type { Logger } from 'pino';
import type { AgentClient } from './agent.js';
import type { Decision, FruitBody, TickBody, TickResult } from './schemas.js';
import { fallbackHeading, isReversal, reset, step, toggleFruit, type BoardSize, type SnakeState } from './state.js';

/**
 * What the routes call: one method per endpoint, so handlers stay a line long and the game's `if`s live
 * here and in state.ts. Built from its dependencies so tests can hand in any agent client.
 */
export function createSnakeService({
  agent,
  logger,
  now = () => performance.now(),
}: {
  agent: AgentClient;
  logger: Logger;
  now?: () => number;
}) {
  /** Asks the agent and turns every failure (including a reversal) into a visible fallback decision. */
  async function decide(state: SnakeState): Promise<Decision> {
    const started = now();
    const answer = await agent.decide(state);
    const latency_ms = Math.max(0, Math.round(now() - started));
    if (answer.ok && !isReversal(state, answer.heading)) {
      return { source: 'agent', heading: answer.heading, raw: answer.raw, latency_ms, job_id: answer.job_id };
    }
    const heading = fallbackHeading(state);
    const applied =
      heading === state.heading ? `kept heading ${heading}` : `heading ${state.heading} was unsafe, turned ${heading}`;
    const decision: Decision = answer.ok
      ? {
          source: 'fallback',
          heading,
          failure: 'reversal',
          raw: answer.raw,
          job_id: answer.job_id,
          latency_ms,
          reason: `agent chose ${answer.heading}, a reversal into the neck; ${applied}`,
        }
      : {
          source: 'fallback',
          heading,
          failure: answer.failure,
          raw: answer.raw,
          job_id: answer.job_id,
          latency_ms,
          reason: `${answer.reason}; ${applied}`,
        };
    logger.warn(
      { failure: decision.failure, reason: decision.reason, job_id: decision.job_id, latency_ms },
      'snake agent fallback',
    );
    return decision;
  }

  return {
    /** Liveness, plus whether ticks can reach the agent at all (false means every tick falls back). */
    health: async () => ({
      ok: true,
      agent_configured: agent.configured,
      ...(agent.configured ? { decider: await agent.decider() } : {}),
    }),

    /** A fresh board. */
    reset: (size: BoardSize): SnakeState => reset(size),

    /** Applies the fruit rule (see toggleFruit). */
    toggleFruit: ({ state, x, y }: FruitBody): SnakeState => toggleFruit(state, x, y),

    /**
     * One tick. Order: an ended game answers 'ended' (no agent call); a hidden page answers 'paused' (no
     * agent call); otherwise the agent decides, the move is applied, and the result is 'moved' or 'ended'.
     */
    async tick({ state, visible }: TickBody): Promise<TickResult> {
      if (state.status === 'ended') return { outcome: 'ended', state, reason: state.ended_reason };
      if (!visible) return { outcome: 'paused', state, reason: 'hidden' };
      const decision = await decide(state);
      const next = step(state, decision.heading);
      if (next.status === 'ended') return { outcome: 'ended', state: next, reason: next.ended_reason, decision };
      return { outcome: 'moved', state: next, decision, ate: next.score > state.score };
    },
  };
}
/** The service's type, for the app that mounts it. */
export type SnakeService = ReturnType<typeof createSnakeService>;
