import { z } from 'zod';
import { createCortexClient, toApiError, CortexApiError, type CortexClient } from '../clients/typescript/src/index.js';
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
  config: Pick<SnakeConfig, 'apiUrl' | 'apiKey' | 'brainId' | 'neuron' | 'agentTimeoutMs' | 'pollMs'> &
    Partial<Pick<SnakeConfig, 'pathway'>>;
}

/** Who decides: the decision pathway (rules in transform and if nodes, or a neuron node when a model is configured) or the neuron. */
export type Decider =
  | { target: 'pathway'; id: string; name?: string; uses: 'rules' | 'model' | 'unknown' }
  | { target: 'neuron'; name: string; uses: 'model' };

/** Only the field we read; the platform may add more. */
const Accepted = z.looseObject({ job_id: z.string().min(1) });

const RAW_MAX = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A pathway's result output or a neuron's reply text, as the text the heading is read from. */
function answerText(result: unknown, target: Decider['target']): string | undefined {
  if (target === 'neuron') {
    const text = typeof result === 'string' ? result : (result as { text?: unknown } | undefined)?.text;
    return typeof text === 'string' ? text : undefined;
  }
  const output = (result as { output?: unknown } | undefined)?.output;
  if (typeof output === 'string') return output;
  return output !== undefined && output !== null ? JSON.stringify(output) : undefined;
}
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

/**
 * Builds the platform client (the repository's TypeScript client, clients/typescript); `configured` is
 * false without a key, and `decide` then fails fast. With a pathway configured (SNAKE_PATHWAY) each tick
 * runs the decision pathway; otherwise it invokes the decision neuron.
 */
export function createAgentClient({ fetch, config }: AgentDeps) {
  const clean = (text: string, max = RAW_MAX) => {
    const r = redact(text, config.apiKey);
    return r.length > max ? `${r.slice(0, max - 1)}…` : r;
  };
  const client = config.apiKey
    ? createCortexClient({ baseUrl: config.apiUrl, apiKey: config.apiKey, brainId: config.brainId, fetch })
    : null;
  const target: Decider['target'] = config.pathway ? 'pathway' : 'neuron';
  const upstream = (what: string, e: CortexApiError): AgentAnswer => ({
    ok: false,
    failure: 'upstream_error',
    reason: `platform answered ${e.status} to ${what}${e.message ? `: ${clean(e.message, 160)}` : ''}`,
  });
  let decider: Promise<Decider> | undefined;
  let pathwayId: string | undefined;

  /** SNAKE_PATHWAY as an id; a name is looked up once (`npm run up` names it before creating it). */
  async function resolvePathway(c: CortexClient, ref: string, signal?: AbortSignal): Promise<string | undefined> {
    if (UUID.test(ref)) return ref;
    if (pathwayId) return pathwayId;
    const r = await c.api.GET('/v1/pathways', {
      params: { query: { search: ref, limit: 50 }, header: { 'x-brain-id': config.brainId ?? '' } },
      signal,
    });
    pathwayId = (r.data?.pathways as { id: string; name: string }[] | undefined)?.find((p) => p.name === ref)?.id;
    return pathwayId;
  }

  /** Starts one decision run: the pathway with the state as input, or the neuron with the state as data. */
  async function start(c: CortexClient, state: SnakeState, signal: AbortSignal): Promise<string | AgentAnswer> {
    const message = describeState(state);
    const pathway = config.pathway ? await resolvePathway(c, config.pathway, signal) : undefined;
    if (config.pathway && !pathway)
      return {
        ok: false,
        failure: 'upstream_error',
        reason: `decision pathway ${clean(config.pathway, 60)} not found`,
      };
    const r = pathway
      ? await c.api.POST('/v1/pathways/{id}/execute', {
          params: { path: { id: pathway } },
          body: { input: { state, message } },
          signal,
        })
      : await c.api.POST('/v1/neurons/{id}/invoke', {
          params: { path: { id: config.neuron } },
          body: { message, data: state },
          signal,
        });
    if (!r.response.ok) return upstream(target === 'pathway' ? 'execute' : 'invoke', toApiError(r));
    const accepted = Accepted.safeParse(r.data);
    return accepted.success
      ? accepted.data.job_id
      : {
          ok: false,
          failure: 'upstream_error',
          reason: `platform ${target === 'pathway' ? 'execute' : 'invoke'} reply has no job_id`,
        };
  }

  return {
    configured: Boolean(config.apiKey),

    /** Who decides, for the page: read once from the pathway's graph (a neuron node means a model decides). */
    decider(): Promise<Decider> {
      if (!config.pathway) return Promise.resolve({ target: 'neuron', name: config.neuron, uses: 'model' });
      const ref = config.pathway;
      decider ??= (async (): Promise<Decider> => {
        const id = client ? await resolvePathway(client, ref).catch(() => undefined) : undefined;
        const r =
          client && id
            ? await client.api.GET('/v1/pathways/{id}', { params: { path: { id } } }).catch(() => null)
            : null;
        const p = r?.data as { name?: string; pathway_graph?: { nodes?: { type?: string }[] } } | undefined;
        if (!p || !id) {
          decider = undefined;
          return { target: 'pathway', id: id ?? ref, name: id ? undefined : ref, uses: 'unknown' };
        }
        const uses = p.pathway_graph?.nodes?.some((n) => n.type === 'neuron') ? 'model' : 'rules';
        return { target: 'pathway', id, name: p.name, uses };
      })();
      return decider;
    },

    /** Asks the decision target for the next heading; resolves within agentTimeoutMs (plus one poll). */
    async decide(state: SnakeState): Promise<AgentAnswer> {
      if (!client)
        return { ok: false, failure: 'not_configured', reason: 'CORTEX_API_KEY is not set on the snake service' };
      const signal = AbortSignal.timeout(config.agentTimeoutMs);
      let jobId: string | undefined;
      try {
        const started = await start(client, state, signal);
        if (typeof started !== 'string') return started;
        jobId = started;
        const job = await client.jobs.wait(jobId, { intervalMs: config.pollMs, signal }).catch((e: unknown) => {
          if (e instanceof CortexApiError) return upstream('job status', e);
          throw e;
        });
        if ('ok' in job) return { ...job, job_id: jobId };
        if (job.status === 'failed') {
          return {
            ok: false,
            failure: 'job_failed',
            reason: `decision job failed: ${clean(job.failedReason ?? 'no reason given', 160)}`,
            job_id: jobId,
          };
        }
        const text = answerText(job.result, target);
        if (text === undefined)
          return {
            ok: false,
            failure: 'invalid_answer',
            reason: 'the completed job has no text result',
            job_id: jobId,
          };
        const heading = parseHeading(text);
        if (!heading)
          return {
            ok: false,
            failure: 'invalid_answer',
            reason: 'the reply is not one of up, down, left, right',
            raw: clean(text),
            job_id: jobId,
          };
        return { ok: true, heading, raw: clean(text), job_id: jobId };
      } catch (err) {
        if (signal.aborted)
          return {
            ok: false,
            failure: 'timeout',
            reason: `no answer within ${config.agentTimeoutMs} ms`,
            job_id: jobId,
          };
        const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
        const detail =
          typeof cause?.code === 'string'
            ? cause.code
            : typeof cause?.message === 'string'
              ? cause.message
              : err instanceof Error
                ? err.message
                : 'unknown error';
        return {
          ok: false,
          failure: 'upstream_error',
          reason: `platform unreachable (${clean(detail, 60)})`,
          job_id: jobId,
        };
      }
    },
  };
}
/** The client's type, for the service that depends on it. */
export type AgentClient = ReturnType<typeof createAgentClient>;
