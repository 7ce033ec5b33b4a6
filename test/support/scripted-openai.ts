import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A scripted OpenAI-compatible HTTP server on 127.0.0.1 (port 0) for tests. It lets tests drive
 * the REAL openai adapter (and the whole agent loop above it) over real HTTP and SSE without an
 * external service: each reply is scripted, every request body is recorded. The wire format
 * follows OpenAI's: `chat.completion.chunk` SSE events, tool-call deltas split across chunks,
 * a usage-only final chunk when `stream_options.include_usage`, then `data: [DONE]`.
 */

/** One scripted answer to POST /v1/chat/completions. */
export interface ScriptedReply {
  text?: string;
  /** Tool calls to return; their arguments are serialised and split across several chunks. */
  toolCalls?: { name: string; arguments: object }[];
  /** Reported usage; defaults to rough counts. */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Send no usage at all, as some compatible servers do. */
  omitUsage?: boolean;
  /** Pause before each streamed chunk (with `chunks`, a paced token stream: one content delta every this many ms). */
  delayMsPerChunk?: number;
  /**
   * Paced stream: chunk k (the role chunk is 0, content delta i is i + 1) is written at
   * `firstTokenMs + k × paceMs` after the headers, on an absolute schedule, so a busy event loop
   * delays single writes but not the rate (a real provider's pace does not depend on its client).
   */
  paceMs?: number;
  /** Called right after each content delta is written to the socket, with its 0-based index and text (emit times for a bench). */
  onContentChunk?: (index: number, text: string) => void;
  /** Think this long after the response headers and before the first chunk (reasoning models: 10–60 s). */
  firstTokenMs?: number;
  /** Drop the connection after this many content chunks (a mid-stream disconnect: no final chunk, no [DONE]). */
  disconnectAfterChunks?: number;
  /** Extra response headers (e.g. `retry-after` on a 429). */
  headers?: Record<string, string>;
  /** Explicit split of `text` into content deltas (default: word by word). */
  chunks?: string[];
  /** Answer with this HTTP status and an OpenAI-style error body instead. */
  status?: number;
  /** Error message for `status`. */
  errorMessage?: string;
  /** Wait this long before answering at all (a hung upstream). */
  hangMs?: number;
  /** finish_reason to report (default `tool_calls` with tool calls, else `stop`). */
  finishReason?: string;
}

/** The parts of a chat-completions request body tests look at; everything else is kept too. */
export interface ScriptedRequestBody {
  model: string;
  messages: { role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string; name?: string }[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: unknown[];
  [key: string]: unknown;
}

/** A running scripted server. */
export interface ScriptedOpenAI {
  /** Root URL ending in `/v1`, to pass as OPENAI_BASE_URL / baseURL. */
  baseURL: string;
  /** Queues replies; they are consumed in order, before the default is used. */
  script(replies: ScriptedReply[]): void;
  /** Reply for requests when the queue is empty; pick by request (e.g. last user message) for concurrent tests. */
  setDefault(fn: (body: ScriptedRequestBody) => ScriptedReply): void;
  /** Called with each parsed chat-completions body, before it is answered. */
  onRequest?: (body: ScriptedRequestBody) => void;
  /** Every chat-completions body received, in arrival order. */
  requests: ScriptedRequestBody[];
  /** How many responses the client closed before the server finished them (aborts). */
  readonly disconnects: number;
  /** Every POST /v1/embeddings body received, answered or not, in arrival order. */
  embeddingRequests: EmbeddingRequestBody[];
  /** The next embeddings calls answer with these HTTP statuses (in order) instead of vectors. */
  failEmbeddings(statuses: number[]): void;
  /** How many POST /v1/audio/transcriptions requests arrived (answered or not). */
  readonly transcriptionRequests: number;
  /** The next transcription calls answer with these HTTP statuses (in order) instead of a transcript. */
  failTranscriptions(statuses: number[]): void;
  close(): Promise<void>;
}

/** An embeddings request as OpenAI's API takes it. */
export interface EmbeddingRequestBody {
  model: string;
  input: string | string[];
  dimensions?: number;
  encoding_format?: string;
}

/**
 * Deterministic unit vector of a text (hashed words into `dim` buckets): equal texts embed alike,
 * which is all the platform's tests of embeddings ask of a provider.
 */
function vectorOf(text: string, dim: number): number[] {
  const v = new Array<number>(dim).fill(0);
  for (const w of text.toLowerCase().split(/\W+/).filter(Boolean)) {
    let h = 2166136261;
    for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619);
    v[(h >>> 0) % dim] += 1;
  }
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
}

/** Options of startScriptedOpenAI(). */
export interface ScriptedOpenAIOptions {
  /** Model ids served by GET /v1/models. */
  models?: string[];
}

/** The last user message's text, the usual key for choosing a reply in setDefault(). */
export function lastUserText(body: ScriptedRequestBody): string {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const m = body.messages[i];
    if (m.role === 'user') return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
  }
  return '';
}

/** Starts the server; without a scripted reply or default, a request gets a 500 that says so. */
export async function startScriptedOpenAI(opts: ScriptedOpenAIOptions = {}): Promise<ScriptedOpenAI> {
  const models = opts.models ?? ['scripted-model'];
  const queue: ScriptedReply[] = [];
  let fallback: ((body: ScriptedRequestBody) => ScriptedReply) | undefined;
  let disconnects = 0;
  const embeddingFaults: number[] = [];
  const transcriptionFaults: number[] = [];
  let transcriptionRequests = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err), type: 'server_error' } });
      else res.destroy();
    });
  });

  const api: ScriptedOpenAI = {
    baseURL: '',
    script: (replies) => void queue.push(...replies),
    setDefault: (fn) => void (fallback = fn),
    requests: [],
    embeddingRequests: [],
    failEmbeddings: (statuses) => void embeddingFaults.push(...statuses),
    get transcriptionRequests() {
      return transcriptionRequests;
    },
    failTranscriptions: (statuses) => void transcriptionFaults.push(...statuses),
    get disconnects() {
      return disconnects;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })),
      });
      return;
    }
    if (req.method === 'POST' && url.pathname === '/v1/audio/transcriptions') {
      // OpenAI's transcription endpoint (multipart; the audio is read and not decoded): a fixed verbose_json transcript.
      await readBody(req);
      transcriptionRequests++;
      const fault = transcriptionFaults.shift();
      if (fault) {
        sendJson(res, fault, {
          error: {
            message: `scripted transcription error ${fault}`,
            type: fault >= 500 ? 'server_error' : 'invalid_request_error',
            code: null,
          },
        });
        return;
      }
      sendJson(res, 200, {
        task: 'transcribe',
        language: 'english',
        duration: 0,
        text: 'scripted transcript',
        segments: [{ id: 0, start: 0, end: 1, text: 'scripted transcript' }],
      });
      return;
    }
    if (req.method === 'POST' && url.pathname === '/v1/embeddings') {
      // OpenAI's embeddings endpoint: vectors in input order, usage.prompt_tokens ≈ characters / 4.
      const body = JSON.parse(await readBody(req)) as EmbeddingRequestBody;
      api.embeddingRequests.push(body);
      const fault = embeddingFaults.shift();
      if (fault) {
        sendJson(res, fault, {
          error: {
            message: `scripted embeddings error ${fault}`,
            type: fault >= 500 ? 'server_error' : 'invalid_request_error',
            code: null,
          },
        });
        return;
      }
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      const tokens = inputs.reduce((a, t) => a + Math.ceil(t.length / 4), 0);
      sendJson(res, 200, {
        object: 'list',
        model: body.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
        data: inputs.map((t, index) => ({ object: 'embedding', index, embedding: vectorOf(t, body.dimensions ?? 8) })),
      });
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
      sendJson(res, 404, {
        error: { message: `No route ${req.method} ${url.pathname}`, type: 'invalid_request_error' },
      });
      return;
    }
    const body = JSON.parse(await readBody(req)) as ScriptedRequestBody;
    api.requests.push(body);
    api.onRequest?.(body);

    res.on('close', () => {
      if (!res.writableFinished) disconnects++; // the client went away mid-answer
    });
    const reply = queue.shift() ?? fallback?.(body);
    if (!reply) {
      sendJson(res, 500, {
        error: { message: 'scripted-openai: no reply scripted for this request', type: 'server_error' },
      });
      return;
    }
    if (reply.hangMs) await sleep(reply.hangMs);
    if (res.destroyed) return;
    if (reply.status && reply.status >= 400) {
      const type =
        reply.status === 429 ? 'rate_limit_exceeded' : reply.status >= 500 ? 'server_error' : 'invalid_request_error';
      sendJson(
        res,
        reply.status,
        { error: { message: reply.errorMessage ?? `scripted error ${reply.status}`, type, code: null } },
        reply.headers,
      );
      return;
    }
    const answer = buildAnswer(body, reply);
    if (body.stream) await streamAnswer(res, body, reply, answer);
    else sendJson(res, 200, completionJson(body, answer));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api.baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return api;
}

interface Answer {
  id: string;
  pieces: string[];
  text: string;
  calls: { id: string; name: string; arguments: string }[];
  finishReason: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

function buildAnswer(body: ScriptedRequestBody, reply: ScriptedReply): Answer {
  const pieces = reply.chunks ?? (reply.text ? reply.text.split(/(?<=\s)(?=\S)/) : []);
  const text = reply.chunks ? reply.chunks.join('') : (reply.text ?? '');
  const calls = (reply.toolCalls ?? []).map((c) => ({
    id: `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    name: c.name,
    arguments: JSON.stringify(c.arguments),
  }));
  const promptChars = JSON.stringify(body.messages).length;
  const u = reply.usage ?? {
    prompt_tokens: Math.ceil(promptChars / 4),
    completion_tokens: pieces.length + calls.length * 8,
  };
  return {
    id: `chatcmpl-${randomUUID()}`,
    pieces,
    text,
    calls,
    finishReason: reply.finishReason ?? (calls.length ? 'tool_calls' : 'stop'),
    usage: reply.omitUsage ? null : { ...u, total_tokens: u.prompt_tokens + u.completion_tokens },
  };
}

async function streamAnswer(
  res: ServerResponse,
  body: ScriptedRequestBody,
  reply: ScriptedReply,
  a: Answer,
): Promise<void> {
  const includeUsage = body.stream_options?.include_usage === true && a.usage !== null;
  const base = {
    id: a.id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    system_fingerprint: null,
  };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  });

  const events: object[] = [chunk({ role: 'assistant', content: '' })];
  for (const p of a.pieces) events.push(chunk({ content: p }));
  a.calls.forEach((c, index) => {
    // Like OpenAI: the first delta names the call, the arguments text follows in pieces.
    events.push(
      chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }),
    );
    for (const part of splitInto(c.arguments, 3))
      events.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
  });
  events.push(chunk({}, a.finishReason));
  if (includeUsage) events.push({ ...base, choices: [], usage: a.usage });

  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...reply.headers,
  });
  res.flushHeaders();
  if (reply.firstTokenMs) await sleep(reply.firstTokenMs);
  const paceFrom = performance.now();
  let content = 0;
  let k = 0;
  for (const e of events) {
    if (reply.delayMsPerChunk) await sleep(reply.delayMsPerChunk);
    if (reply.paceMs) {
      const wait = paceFrom + k++ * reply.paceMs - performance.now();
      if (wait > 0) await sleep(wait);
    }
    if (res.destroyed) return;
    if (reply.disconnectAfterChunks !== undefined && content >= reply.disconnectAfterChunks) {
      res.destroy(); // the connection drops mid-answer
      return;
    }
    res.write(`data: ${JSON.stringify(e)}\n\n`);
    const delta = (e as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content;
    if (delta) {
      // Counted before the optional callback: `f?.(content++)` would skip the increment when f is unset.
      const index = content++;
      reply.onContentChunk?.(index, delta);
    }
  }
  res.end('data: [DONE]\n\n');
}

function completionJson(body: ScriptedRequestBody, a: Answer): object {
  return {
    id: a.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: a.text || (a.calls.length ? null : ''),
          refusal: null,
          ...(a.calls.length
            ? {
                tool_calls: a.calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: a.finishReason,
      },
    ],
    ...(a.usage ? { usage: a.usage } : {}),
  };
}

/** Splits text into at most n non-empty pieces of similar length. */
function splitInto(text: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}
