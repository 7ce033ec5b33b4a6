import {
  lastUserText,
  startScriptedOpenAI,
  type ScriptedOpenAI,
  type ScriptedReply,
  type ScriptedRequestBody,
} from './scripted-openai.js';

/**
 * A provider simulator that behaves like a real model behind an OpenAI-compatible endpoint
 * (docs/decisions.md, "Model turns under real provider behaviour"): it thinks before its first token, streams with a delay between tokens,
 * says something different on every call (as any model at temperature > 0 does), and fails the
 * way real providers fail: 429 with Retry-After, 5xx, a connection dropped mid-stream. It runs
 * on the same wire format as the deterministic scripted server (test/support/scripted-openai.ts),
 * which stays the tool for tests that assert exact text. Durability and liveness claims are
 * tested against this one.
 */

/** A failure the simulator injects into one call. */
export type SimFault = '400' | '429' | '500' | '503' | 'disconnect' | 'hang';

export interface ProviderSimOptions {
  /** Think time before the first token, ms (a number, or [min, max] drawn per call). */
  firstTokenMs?: number | [number, number];
  /** Delay before each later chunk, ms. */
  interTokenMs?: number | [number, number];
  /** Tokens per reply. */
  tokens?: number | [number, number];
  /** Faults for the next calls, in order (`null` = answer normally); consumed before `faultRate`. */
  faults?: (SimFault | null)[];
  /** Per-call probability of each fault (seeded, so a run is reproducible). */
  faultRate?: Partial<Record<SimFault, number>>;
  /** Retry-After (seconds) sent with 429 and 503. */
  retryAfterS?: number;
  /** How long a `hang` keeps the request open before answering 504. */
  hangMs?: number;
  /** Answers that must say something exact (a classify node's category): the text for this request, or null for the usual random words. */
  text?: (body: ScriptedRequestBody) => string | null;
  /** Turns that call tools: return the calls for this request, or null for a text answer. */
  toolCalls?: (body: ScriptedRequestBody) => { name: string; arguments: object }[] | null;
  /** PRNG seed (faults and lengths); the text still differs on every call. */
  seed?: number;
}

/** A running simulator: the scripted server plus what it said and did on each call. */
export interface ProviderSim extends ScriptedOpenAI {
  /** Every text answer streamed in full or in part, in call order (a dropped call's whole planned text). */
  readonly said: { call: number; text: string; fault: SimFault | null; user: string }[];
  /** When each call arrived (ms since epoch), in call order. */
  readonly times: number[];
  /** Changes the options for later calls. */
  configure(opts: Partial<ProviderSimOptions>): void;
}

const WORDS =
  'the a run model token stream durable agent worker queue retry answer reply turn graph neuron trace signal timer ' +
  'record store shard river orbit maple copper violet lantern harbor meadow summit canyon ember quartz willow'.split(
    ' ',
  );

/** mulberry32: a small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The simulation itself, to install on any scripted server with `setDefault(sim.reply)` (the bench does). */
export interface Simulation {
  reply: (body: ScriptedRequestBody) => ScriptedReply;
  said: ProviderSim['said'];
  times: number[];
  configure(opts: Partial<ProviderSimOptions>): void;
}

export function createSimulation(initial: ProviderSimOptions = {}): Simulation {
  let opts: ProviderSimOptions = { ...initial };
  const rnd = prng(opts.seed ?? 1);
  const pick = (v: number | [number, number] | undefined, dflt: number) =>
    v === undefined ? dflt : typeof v === 'number' ? v : Math.round(v[0] + rnd() * (v[1] - v[0]));
  const faults = [...(opts.faults ?? [])];
  const said: ProviderSim['said'] = [];
  const times: number[] = [];
  let calls = 0;

  const reply = (body: ScriptedRequestBody): ScriptedReply => {
    const call = ++calls;
    let fault: SimFault | null = faults.length ? faults.shift()! : null;
    if (fault === null && opts.faultRate) {
      for (const [f, p] of Object.entries(opts.faultRate) as [SimFault, number][])
        if (rnd() < p) {
          fault = f;
          break;
        }
    }
    const retryAfter = { 'retry-after': String(opts.retryAfterS ?? 1) };
    times.push(Date.now());
    if (fault === '400') return { status: 400, errorMessage: "Invalid value for 'temperature': must be at most 2" };
    if (fault === '429') return { status: 429, errorMessage: 'Rate limit reached for requests', headers: retryAfter };
    if (fault === '500') return { status: 500, errorMessage: 'The server had an error while processing your request' };
    if (fault === '503')
      return { status: 503, errorMessage: 'The engine is currently overloaded', headers: retryAfter };
    if (fault === 'hang') return { hangMs: opts.hangMs ?? 30_000, status: 504, errorMessage: 'upstream timed out' };
    const tools = opts.toolCalls?.(body) ?? null;
    const firstTokenMs = pick(opts.firstTokenMs, 0);
    const delayMsPerChunk = pick(opts.interTokenMs, 0);
    if (tools) return { toolCalls: tools, firstTokenMs, delayMsPerChunk };
    // Different on every call: a call number no other call has, then random words.
    const exact = opts.text?.(body) ?? null;
    const n = exact !== null ? exact.split(/(?<=\s)(?=\S)/).length : Math.max(1, pick(opts.tokens, 12));
    const chunks =
      exact !== null
        ? exact.split(/(?<=\s)(?=\S)/)
        : [`c${call} `, ...Array.from({ length: n - 1 }, () => `${WORDS[Math.floor(Math.random() * WORDS.length)]} `)];
    said.push({ call, text: chunks.join(''), fault, user: lastUserText(body) });
    return {
      chunks,
      firstTokenMs,
      delayMsPerChunk,
      usage: { prompt_tokens: Math.ceil(JSON.stringify(body.messages).length / 4), completion_tokens: n },
      ...(fault === 'disconnect' ? { disconnectAfterChunks: Math.max(1, Math.floor(n / 2)) } : {}),
    };
  };

  return {
    reply,
    said,
    times,
    configure(next: Partial<ProviderSimOptions>) {
      opts = { ...opts, ...next };
      if (next.faults) faults.splice(0, faults.length, ...next.faults);
    },
  };
}

/** Starts a scripted OpenAI-compatible server on loopback that answers with a simulation. */
export async function startProviderSim(initial: ProviderSimOptions = {}): Promise<ProviderSim> {
  const server = await startScriptedOpenAI();
  const sim = createSimulation(initial);
  server.setDefault(sim.reply);
  return Object.assign(server, { said: sim.said, times: sim.times, configure: sim.configure });
}
