import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { SnakeConfig } from './config.js';
import type { AgentFailure } from './schemas.js';
import { HEADINGS, Heading, fmt, isReversal, isSafe, type SnakeState } from './state.js';

/*
 * Client for the decision agent on the Cortex platform: invoke the decision neuron with the state as
 * `data`, poll the job until it completes, fails or the deadline passes, and read a heading from the
 * reply. It never throws for upstream trouble: every failure comes back as a typed AgentAnswer so the
 * caller can fall back visibly. The platform key is only ever put in the Authorization header, and every
 * upstream-derived string is scrubbed of it before it is returned.
 */

/** The agent's answer, or why there is none. Reversal is judged by the caller, which knows the rules. */
export type AgentAnswer =
  | { ok: true; heading: Heading; raw: string; job_id: string }
  | { ok: false; failure: Exclude<AgentFailure, 'reversal'>; reason: string; raw?: string; job_id?: string };

/** What the client needs; `fetch` is injected so tests can point it anywhere or replace it. */
export interface AgentDeps {
  fetch: typeof fetch;
  config: Pick<SnakeConfig, 'apiUrl' | 'apiKey' | 'brainId' | 'neuron' | 'agentTimeoutMs' | 'pollMs'>;
}

/** Only the fields we read; the platform may add more. */
const InvokeAccepted = z.looseObject({ job_id: z.string().min(1) });
const JobStatus = z.looseObject({
  status: z.string(),
  failedReason: z.string().nullish(),
  result: z.unknown().optional(),
});

const RAW_MAX = 200;

/**
 * Reads a heading from the model's reply: a JSON string or an object with a `heading` field whose value is
 * one of up/down/left/right (any case), or else free text containing exactly one distinct heading word
 * ("Left." or "I go left"). Anything else (no heading word, or two different ones) is null.
 */
export function parseHeading(text: string): Heading | null {
  const t = text.trim();
  const exact = (v: unknown) => {
    const h = Heading.safeParse(typeof v === 'string' ? v.trim().toLowerCase() : v);
    return h.success ? h.data : null;
  };
  try {
    const json: unknown = JSON.parse(t);
    if (typeof json === 'string') return exact(json);
    if (json && typeof json === 'object' && 'heading' in json) return exact(json.heading);
  } catch {
    // not JSON: read it as text
  }
  const words = new Set(t.toLowerCase().match(/\b(up|down|left|right)\b/g) ?? []);
  return words.size === 1 ? exact([...words][0]) : null;
}

/** The `message` sent with each invoke: the board in words, plus the legal and safe moves. */
export function describeState(s: SnakeState): string {
  const legal = HEADINGS.filter((h) => !isReversal(s, h));
  const safe = legal.filter((h) => isSafe(s, h));
  return [
    `Snake game on a ${s.width}x${s.height} grid; x grows right, y grows down, (0, 0) is the top-left cell.`,
    `Head at ${fmt(s.snake[0])}, heading ${s.heading}, length ${s.snake.length}, score ${s.score}.`,
    `Fruit: ${s.fruit ? fmt(s.fruit) : 'none'}. The full state is in data (snake cells head first).`,
    `Legal moves: ${legal.join(', ')}. Moves that do not hit a wall or the body: ${safe.join(', ') || 'none'}.`,
    'Reply with exactly one word: up, down, left or right.',
  ].join('\n');
}

/** Replaces every occurrence of the secret, so an upstream that echoes the key cannot leak it. */
export function redact(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join('[redacted]') : text;
}

/** Builds the platform client; `configured` is false without a key, and `decide` then fails fast. */
export function createAgentClient({ fetch, config }: AgentDeps) {
  const clean = (text: string, max = RAW_MAX) => {
    const r = redact(text, config.apiKey);
    return r.length > max ? `${r.slice(0, max - 1)}…` : r;
  };
  const headers = (): Record<string, string> => ({
    authorization: `Bearer ${config.apiKey ?? ''}`,
    'content-type': 'application/json',
    ...(config.brainId ? { 'x-brain-id': config.brainId } : {}),
  });
  const upstream = async (what: string, res: Response): Promise<AgentAnswer> => ({
    ok: false,
    failure: 'upstream_error',
    reason: `platform answered ${res.status} to ${what}${await errorMessage(res).then((m) => (m ? `: ${clean(m, 160)}` : ''))}`,
  });

  return {
    configured: Boolean(config.apiKey),

    /** Asks the decision neuron for the next heading; resolves within agentTimeoutMs (plus one poll). */
    async decide(state: SnakeState): Promise<AgentAnswer> {
      if (!config.apiKey) return { ok: false, failure: 'not_configured', reason: 'CORTEX_API_KEY is not set on the snake service' };
      const signal = AbortSignal.timeout(config.agentTimeoutMs);
      let jobId: string | undefined;
      try {
        const invokeUrl = `${config.apiUrl}/v1/neurons/${encodeURIComponent(config.neuron)}/invoke`;
        const body = JSON.stringify({ message: describeState(state), data: state });
        const res = await fetch(invokeUrl, { method: 'POST', headers: headers(), body, signal });
        if (!res.ok) return await upstream('invoke', res);
        const accepted = InvokeAccepted.safeParse(await res.json().catch(() => null));
        if (!accepted.success) return { ok: false, failure: 'upstream_error', reason: 'platform invoke reply has no job_id' };
        jobId = accepted.data.job_id;

        for (;;) {
          await sleep(config.pollMs, undefined, { signal });
          const r = await fetch(`${config.apiUrl}/v1/jobs/${encodeURIComponent(jobId)}/status`, { headers: headers(), signal });
          if (!r.ok) return { ...(await upstream('job status', r)), job_id: jobId };
          const job = JobStatus.safeParse(await r.json().catch(() => null));
          if (!job.success) return { ok: false, failure: 'upstream_error', reason: 'platform job status is malformed', job_id: jobId };
          const { status, failedReason, result } = job.data;
          if (status === 'failed') {
            return { ok: false, failure: 'job_failed', reason: `decision job failed: ${clean(failedReason ?? 'no reason given', 160)}`, job_id: jobId };
          }
          if (status !== 'completed') continue;
          const text = typeof result === 'string' ? result : (result as { text?: unknown } | undefined)?.text;
          if (typeof text !== 'string') return { ok: false, failure: 'invalid_answer', reason: 'the completed job has no text result', job_id: jobId };
          const heading = parseHeading(text);
          if (!heading) return { ok: false, failure: 'invalid_answer', reason: 'the reply is not one of up, down, left, right', raw: clean(text), job_id: jobId };
          return { ok: true, heading, raw: clean(text), job_id: jobId };
        }
      } catch (err) {
        if (signal.aborted) return { ok: false, failure: 'timeout', reason: `no answer within ${config.agentTimeoutMs} ms`, job_id: jobId };
        const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
        const detail =
          typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : err instanceof Error ? err.message : 'unknown error';
        return { ok: false, failure: 'upstream_error', reason: `platform unreachable (${clean(detail, 60)})`, job_id: jobId };
      }
    },
  };
}
/** The client's type, for the service that depends on it. */
export type AgentClient = ReturnType<typeof createAgentClient>;

/** The `message` of a `{ message, code }` error body, or the start of a text body. */
async function errorMessage(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const m: unknown = (JSON.parse(text) as { message?: unknown }).message;
    if (typeof m === 'string') return m;
  } catch {
    // not JSON
  }
  return text.trim();
}
