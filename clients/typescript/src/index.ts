import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';
import {
  CortexApiError,
  JobReply,
  apiError,
  followStream,
  type JobStreamData,
  type StreamEntry,
  type StreamOptions,
  type TraceEventData,
} from './streams.js';

/*
 * The Cortex TypeScript client: the generated, fully typed HTTP surface (`api`, openapi-fetch over
 * the types in schema.ts) plus what generation cannot give: job polling, and the job and trace
 * streams with cursor resume and the reset rule (docs/streams.md).
 */

export type { components, operations, paths } from './schema.js';
export { CortexApiError, JobReply, followStream, isTerminal } from './streams.js';
export type { JobStreamData, StreamEntry, StreamOptions, TraceEventData } from './streams.js';

/**
 * An operation whose required `X-Brain-Id` header may be left out, because the client sends its
 * `brainId` on every request. Every other parameter keeps its shape; the header object itself becomes
 * optional when nothing else in it is required.
 */
export type BrainOptional<Op> = Op extends { parameters: infer P }
  ? P extends { header: infer H }
    ? H extends { 'x-brain-id': string }
      ? Omit<Op, 'parameters'> & {
          parameters: Omit<P, 'header'> &
            (object extends Omit<H, 'x-brain-id'>
              ? { header?: Omit<H, 'x-brain-id'> & { 'x-brain-id'?: string } }
              : { header: Omit<H, 'x-brain-id'> & { 'x-brain-id'?: string } });
        }
      : Op
    : Op
  : Op;

/** The API's paths as a client created with `brainId` sees them: brain-scoped operations need no header. */
export type BrainScopedPaths = {
  [P in keyof paths]: { [M in keyof paths[P]]: BrainOptional<paths[P][M]> };
};

/** A job as `GET /v1/jobs/{jobId}/status` returns it. */
export type Job = components['schemas']['Job'];
export type JobState = Job['status'];

export interface CortexClientOptions {
  /** The API's base URL, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  /** An API key or a JWT, sent as `Authorization: Bearer …`. */
  apiKey: string;
  /**
   * Sent as `X-Brain-Id` on every request when set. When its type is `string` (not `string | undefined`),
   * operations that require the header (listing neurons, pathways or receptors, creating a pathway, grep)
   * type-check without it: `api` is typed over `BrainScopedPaths`.
   */
  brainId?: string;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

export interface WaitOptions {
  /** Poll interval (default 500 ms). */
  intervalMs?: number;
  /** Give up after this long (default: never; use `signal` to stop). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** States that end the wait (default completed and failed; add waiting or paused to stop at a human step). */
  until?: JobState[];
}

export interface FollowResult {
  /** The reply as the reset rule shows it (equals the stored reply of a completed neuron run). */
  text: string;
  /**
   * The terminal entry: `complete` (with `result`) or `error`. Undefined when the stream was resumed
   * after its terminal entry (the API answers 204: the job had already ended and nothing follows the
   * cursor); `jobs.status` then has the job's result.
   */
  terminal?: StreamEntry<JobStreamData>;
  /** The last entry's cursor, to resume from later (the cursor given when nothing followed it). */
  lastEventId: string | undefined;
}

/** The API's `{ message, code }` of a refused typed call (openapi-fetch has read the body into `error`). */
export function toApiError(r: { error?: unknown; response: Response }): CortexApiError {
  const e = r.error as { message?: unknown; code?: unknown } | undefined;
  return new CortexApiError(
    r.response.status,
    typeof e?.code === 'string' ? e.code : 'UNKNOWN',
    typeof e?.message === 'string' ? e.message : `HTTP ${r.response.status}`,
  );
}

/** Throws the API's `{ message, code }` as a CortexApiError when a typed call was refused. */
export function unwrap<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.error !== undefined || r.data === undefined) throw toApiError(r);
  return r.data;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/** The paths a client's `api` is typed over: brain-scoped when it was created with a `brainId` string. */
export type ClientPaths<O extends CortexClientOptions> = O['brainId'] extends string ? BrainScopedPaths : paths;

/** Builds a client bound to one API and credential (and brain, with `brainId`). */
export function createCortexClient<O extends CortexClientOptions>(opts: O): CortexClient<ClientPaths<O>> {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  // Called through a wrapper: a browser's fetch called detached from window throws "Illegal invocation".
  const doFetch: typeof fetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const headers: Record<string, string> = {
    authorization: `Bearer ${opts.apiKey}`,
    ...(opts.brainId ? { 'x-brain-id': opts.brainId } : {}),
  };
  // openapi-fetch calls fetch(request); a custom fetch gets the same single-argument call.
  const api: Client<paths> = createClient<paths>({ baseUrl, headers, fetch: (req: Request) => doFetch(req) });
  return bindClient(api, baseUrl, doFetch, headers) as CortexClient<ClientPaths<O>>;
}

/** The helpers over one typed `api` (the same object whichever paths type it is seen through). */
function bindClient(api: Client<paths>, baseUrl: string, doFetch: typeof fetch, headers: Record<string, string>) {
  const jobs = {
    /** `GET /v1/jobs/{jobId}/status`: the read model merged with the run's live state. */
    async status(jobId: string, signal?: AbortSignal): Promise<Job> {
      return unwrap(await api.GET('/v1/jobs/{jobId}/status', { params: { path: { jobId } }, signal }));
    },

    /**
     * Polls the job until it reaches one of `until` (default completed or failed) and returns it.
     * A 429 waits for its Retry-After; any other refusal is thrown.
     */
    async wait(jobId: string, w: WaitOptions = {}): Promise<Job> {
      const until = w.until ?? ['completed', 'failed'];
      const deadline = w.timeoutMs === undefined ? Infinity : Date.now() + w.timeoutMs;
      for (;;) {
        const r = await api.GET('/v1/jobs/{jobId}/status', { params: { path: { jobId } }, signal: w.signal });
        if (r.response.status === 429) {
          await sleep(Number(r.response.headers.get('retry-after') ?? 1) * 1000, w.signal);
          continue;
        }
        const job = unwrap(r);
        if (until.includes(job.status)) return job;
        if (Date.now() >= deadline) throw new Error(`job ${jobId} still ${job.status} after ${w.timeoutMs} ms`);
        await sleep(Math.min(w.intervalMs ?? 500, Math.max(0, deadline - Date.now())), w.signal);
      }
    },

    /**
     * The job's stream entries, resuming after cuts, ending after the terminal entry, or at once
     * (no entry) when the job has ended and nothing follows `after` (the API's 204).
     */
    stream(jobId: string, s: StreamOptions = {}): AsyncGenerator<StreamEntry<JobStreamData>> {
      return followStream<JobStreamData>(
        { fetch: doFetch, url: `${baseUrl}/v1/jobs/${encodeURIComponent(jobId)}/stream`, headers },
        { ...s, endOnTerminal: true },
      );
    },

    /**
     * Follows the job to its end and returns the reply as the reset rule shows it; `onText` sees the
     * shown text each time it changes (a `reset` may shorten it).
     */
    async follow(
      jobId: string,
      s: StreamOptions & { onText?: (text: string) => void; onEntry?: (e: StreamEntry<JobStreamData>) => void } = {},
    ): Promise<FollowResult> {
      const reply = new JobReply();
      let last = s.after;
      for await (const entry of jobs.stream(jobId, s)) {
        s.onEntry?.(entry);
        last = entry.id || undefined; // a stream_reset (no id) starts the stream over
        if (reply.apply(entry.data)) s.onText?.(reply.text);
        if (entry.data.type === 'complete' || entry.data.type === 'error')
          return { text: reply.text, terminal: entry, lastEventId: entry.id };
      }
      // The stream ends without a terminal entry only on a 204: the job ended before the cursor.
      return { text: reply.text, lastEventId: last };
    },
  };

  const traces = {
    /** A trace's events (new engrams, run state, titles); never ends by itself: stop it with `signal`. */
    events(traceId: string, s: StreamOptions = {}): AsyncGenerator<StreamEntry<TraceEventData>> {
      return followStream<TraceEventData>(
        { fetch: doFetch, url: `${baseUrl}/v1/traces/${encodeURIComponent(traceId)}/events`, headers },
        { ...s, endOnTerminal: false },
      );
    },
  };

  return { api, jobs, traces, baseUrl };
}

/** A client: `api` typed over `P` (the API's paths, or `BrainScopedPaths` for a client with a brain). */
export type CortexClient<P extends object = paths> = Omit<ReturnType<typeof bindClient>, 'api'> & { api: Client<P> };
export { apiError };
