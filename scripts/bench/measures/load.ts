/**
 * (n) Load: writes beside streaming runs, against the compiled API in its own process.
 *
 * - LOAD_RUNS streaming runs are kept in flight for the whole window (a run that ends is replaced),
 *   each read by LOAD_READERS_PER_RUN SSE readers to its terminal entry; a reader is exact when the
 *   reply it shows (resets applied) equals the stored reply of the terminal entry. They start one by
 *   one over one run's length (a steady population, not a burst); a start refused is tried again
 *   after its Retry-After, as a client would.
 * - Once all are in flight, an open-loop writer sends LOAD_WRITES_PER_S writes a second (it does not wait for
 *   answers), alternating `POST /v1/traces/:id/messages` (over ten traces) and `POST /v1/artifacts`,
 *   each with a unique text and a client timeout of 30 s. Afterwards every write answered 503 is
 *   looked for in the store: it must not be there.
 * - Then the sustainable rate of each write alone: open-loop steps of LOAD_STEP_S seconds at rising
 *   rates; the highest rate whose answers have p99 < 1 s and no 503.
 */
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import type { TestClient } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import { dataOf, readSse, shownReply } from '../../../test/support/sse.js';

export interface LoadWorkspace {
  key: string;
  brainHeaders: Record<string, string>;
}

interface WriteOutcome {
  kind: 'message' | 'artifact';
  text: string;
  status: number | 'timeout' | 'error';
  ms: number;
  at: number;
  /** From the answer's Server-Timing: the wait for an admission slot and the whole request inside the API, ms. */
  admit?: number;
  app?: number;
}

/** One phase's duration from a Server-Timing header (`name;dur=1.2`), or undefined. */
const timingOf = (header: string | null, name: string): number | undefined => {
  const m = header?.match(new RegExp(`(?:^|,\\s*)${name};dur=([0-9.]+)`));
  return m ? Number(m[1]) : undefined;
};

export interface LoadResult {
  seconds: number;
  writes: {
    sent: number;
    created: number;
    shed: number;
    other: number;
    timeouts: number;
    p50: number;
    p99: number;
    storedAfter503: number;
    /** Per kind (message appends, artifact creates): answered p50 and p99, ms. */
    byKind: Record<'message' | 'artifact', { p50: number; p99: number }>;
  };
  runs: { completed: number; failed: number; readers: number; exact: number };
  rss: { start: number; end: number };
  sustainable: {
    message: number;
    artifact: number;
    steps: { kind: string; rate: number; p99: number; shed: number; timeouts: number }[];
  };
}

const CLIENT_TIMEOUT_MS = 30_000;
/** About how long one of the load's runs streams (100 tokens at 100 ms, the first after 300 ms). */
const RUN_LENGTH_MS = 10_300;
const SUSTAIN_P99_MS = 1_000;

const pct = (xs: number[], q: number): number => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** One write with a client timeout; its outcome and how long the answer took. */
async function write(
  api: TestClient,
  ws: LoadWorkspace,
  kind: WriteOutcome['kind'],
  traceId: string,
  text: string,
): Promise<WriteOutcome> {
  const t0 = performance.now();
  const at = Date.now();
  const url = kind === 'message' ? `${api.url}/v1/traces/${traceId}/messages` : `${api.url}/v1/artifacts`;
  const body = kind === 'message' ? { content: text } : { title: text, content: `${text} body` };
  try {
    const res = await fetch(url, {
      method: 'POST',
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      headers: { authorization: `Bearer ${ws.key}`, 'content-type': 'application/json', ...ws.brainHeaders },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    const timing = res.headers.get('server-timing');
    return {
      kind,
      text,
      status: res.status,
      ms: performance.now() - t0,
      at,
      admit: timingOf(timing, 'admit'),
      app: timingOf(timing, 'app'),
    };
  } catch (e) {
    const timeout = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
    return { kind, text, status: timeout ? 'timeout' : 'error', ms: performance.now() - t0, at };
  }
}

/** Open loop: `rate` writes a second for `seconds`, whatever the answers; resolves when all are answered. */
async function openLoop(
  seconds: number,
  rate: number,
  send: (i: number) => Promise<WriteOutcome>,
): Promise<WriteOutcome[]> {
  const pending: Promise<WriteOutcome>[] = [];
  const t0 = performance.now();
  const total = Math.round(seconds * rate);
  for (let i = 0; i < total; i++) {
    const at = t0 + (i * 1000) / rate;
    const wait = at - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(send(i));
  }
  return Promise.all(pending);
}

/** Texts of the trace's messages and the workspace's artifact titles, to find writes answered 503. */
async function storedTexts(api: TestClient, ws: LoadWorkspace, traces: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const t of traces) {
    const r = await api.get<{ engrams?: { content?: { content?: unknown } }[] }>(
      `/v1/traces/${t}/messages?limit=100000`,
      ws.key,
    );
    for (const e of r.body.engrams ?? []) out.add(String(e.content?.content ?? ''));
  }
  for (let offset = 0; ; offset += 100) {
    const r = await api.get<{ artifacts?: { title?: string; name?: string }[] }>(
      `/v1/artifacts?limit=100&offset=${offset}`,
      ws.key,
      ws.brainHeaders,
    );
    const items = r.body.artifacts ?? [];
    for (const a of items) out.add(String(a.title ?? a.name ?? ''));
    if (items.length < 100) break;
  }
  return out;
}

export async function measureLoad(o: {
  api: TestClient;
  apiRss: () => number;
  ws: LoadWorkspace;
  llm: ScriptedOpenAI;
  neuronId: string;
  say: (l: string) => void;
  seconds: number;
  runs: number;
  readersPerRun: number;
  writesPerS: number;
  stepS: number;
}): Promise<LoadResult> {
  const { api, ws, say } = o;
  // Each run streams 100 tokens at 100 ms: about 10 s, so runs turn over during the window.
  o.llm.setDefault(() => ({
    chunks: Array.from({ length: 100 }, (_, i) => `t${i} `),
    paceMs: 100,
    firstTokenMs: 300,
    usage: { prompt_tokens: 20, completion_tokens: 100 },
  }));
  const traces = Array.from({ length: 10 }, () => randomUUID());
  const rssStart = o.apiRss();
  const end = performance.now() + RUN_LENGTH_MS + o.seconds * 1000;
  const runStats = { completed: 0, failed: 0, readers: 0, exact: 0 };

  const oneRun = async (n: number): Promise<void> => {
    const res = await api.post(`/v1/neurons/${o.neuronId}/invoke`, ws.key, { message: `load run ${n}`, stream: true });
    if (res.status !== 202) {
      runStats.failed++;
      // As a client would: a refused start is tried again after its Retry-After (1 s when none), not at once.
      const after = Number(res.headers.get('retry-after') ?? 1);
      await new Promise((r) => setTimeout(r, Math.min(10, Number.isFinite(after) && after > 0 ? after : 1) * 1000));
      return;
    }
    const jobId = String(res.body.job_id);
    const readers = await Promise.all(
      Array.from({ length: o.readersPerRun }, () => {
        // Each event is looked at once (the client's own CPU stays small beside the platform's).
        let seen = 0;
        return readSse(`${api.url}/v1/jobs/${jobId}/stream`, {
          headers: { authorization: `Bearer ${ws.key}` },
          timeoutMs: 120_000,
          until: (events) => {
            for (; seen < events.length; seen++) {
              const type = dataOf(events[seen]!).type;
              if (type === 'complete' || type === 'error') return true;
            }
            return false;
          },
        }).catch(() => null);
      }),
    );
    let ok = true;
    for (const r of readers) {
      runStats.readers++;
      const entries = (r?.events ?? []).map(dataOf);
      const last = entries.at(-1);
      if (last?.type !== 'complete') {
        ok = false;
        continue;
      }
      if (shownReply(entries) === String((last.result as { text?: string } | undefined)?.text ?? '')) runStats.exact++;
    }
    if (ok) runStats.completed++;
    else runStats.failed++;
  };
  let runNo = 0;
  const slot = async (): Promise<void> => {
    while (performance.now() < end)
      await oneRun(runNo++).catch(() => {
        runStats.failed++;
      });
  };

  say(
    `(n) load: ${o.runs} streaming runs (×${o.readersPerRun} readers) kept in flight (started over ${RUN_LENGTH_MS / 1000} s), then ${o.writesPerS} writes/s (messages and artifacts) for ${o.seconds} s`,
  );
  // The runs start one by one over one run's length, as independent users would, rather than all in
  // the same millisecond: runs of equal length started together stay in step, and every ~10 s the
  // whole population would end and start again at once (a burst; bench (t) measures bursts). The
  // writer's window opens once all are in flight.
  const slots = Array.from({ length: o.runs }, async (_, i) => {
    await new Promise((r) => setTimeout(r, (i * RUN_LENGTH_MS) / o.runs));
    return slot();
  });
  await new Promise((r) => setTimeout(r, RUN_LENGTH_MS));
  const writes = await openLoop(o.seconds, o.writesPerS, (i) =>
    write(api, ws, i % 2 ? 'artifact' : 'message', traces[i % traces.length]!, `load-${i}-${randomUUID().slice(0, 8)}`),
  );
  await Promise.all(slots);
  say('(n) settling 15 s, then looking for writes answered 503 in the store');
  await new Promise((r) => setTimeout(r, 15_000));
  const rssEnd = o.apiRss();
  const stored = await storedTexts(api, ws, traces);
  const answered = writes.filter((w) => typeof w.status === 'number');
  const lat = answered.map((w) => w.ms);
  const result: LoadResult = {
    seconds: o.seconds,
    writes: {
      sent: writes.length,
      created: writes.filter((w) => w.status === 201).length,
      shed: writes.filter((w) => w.status === 503).length,
      other: answered.filter((w) => w.status !== 201 && w.status !== 503).length,
      timeouts: writes.filter((w) => w.status === 'timeout' || w.status === 'error').length,
      p50: pct(lat, 0.5),
      p99: pct(lat, 0.99),
      storedAfter503: writes.filter((w) => w.status === 503 && stored.has(w.text)).length,
      byKind: {
        message: kindPercentiles(answered, 'message'),
        artifact: kindPercentiles(answered, 'artifact'),
      },
    },
    runs: runStats,
    rss: { start: rssStart, end: rssEnd },
    sustainable: { message: 0, artifact: 0, steps: [] },
  };
  say(
    `(n) writes ${result.writes.sent}: 201 ${result.writes.created}, 503 ${result.writes.shed}, other ${result.writes.other}, client timeouts ${result.writes.timeouts}; p50 ${result.writes.p50.toFixed(0)} ms p99 ${result.writes.p99.toFixed(0)} ms; stored though answered 503: ${result.writes.storedAfter503}`,
  );
  if (process.env.BENCH_LOAD_DUMP) await writeFile(process.env.BENCH_LOAD_DUMP, JSON.stringify(writes));
  for (const kind of ['message', 'artifact'] as const) {
    const { p50, p99 } = result.writes.byKind[kind];
    const shed = answered.filter((w) => w.kind === kind && w.status === 503).length;
    say(`(n) ${kind}s: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, 503 ${shed}`);
    // Where a write's time went (Server-Timing): waiting for a slot, the rest inside the API, and outside it.
    const timed = answered.filter((w) => w.kind === kind && w.app !== undefined);
    const part = (f: (w: WriteOutcome) => number) =>
      `p50 ${pct(timed.map(f), 0.5).toFixed(0)} / p99 ${pct(timed.map(f), 0.99).toFixed(0)} ms`;
    say(
      `(n) ${kind}s where it goes: admission wait ${part((w) => w.admit ?? 0)}; in the API after it ${part((w) => w.app! - (w.admit ?? 0))}; before and after the API (client, sockets, event loop) ${part((w) => w.ms - w.app!)}`,
    );
  }
  say(
    `(n) runs completed ${runStats.completed}, failed ${runStats.failed}; readers exact ${runStats.exact}/${runStats.readers}`,
  );

  // The sustainable rate of each write alone.
  for (const kind of ['message', 'artifact'] as const) {
    const trace = randomUUID();
    for (const rate of [5, 10, 20, 40, 80, 160]) {
      const out = await openLoop(o.stepS, rate, (i) => write(api, ws, kind, trace, `sustain-${kind}-${rate}-${i}`));
      const p99 = pct(
        out.filter((w) => typeof w.status === 'number').map((w) => w.ms),
        0.99,
      );
      const shed = out.filter((w) => w.status === 503).length;
      const timeouts = out.filter((w) => typeof w.status !== 'number').length;
      result.sustainable.steps.push({ kind, rate, p99, shed, timeouts });
      say(`(n) ${kind}s alone at ${rate}/s: p99 ${p99.toFixed(0)} ms, 503 ${shed}, timeouts ${timeouts}`);
      if (p99 >= SUSTAIN_P99_MS || shed > 0 || timeouts > 0) break;
      result.sustainable[kind] = rate;
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
  return result;
}

/** One kind's answered p50 and p99. */
function kindPercentiles(answered: { kind: string; ms: number }[], kind: 'message' | 'artifact') {
  const ms = answered.filter((w) => w.kind === kind).map((w) => w.ms);
  return { p50: pct(ms, 0.5), p99: pct(ms, 0.99) };
}

/** The section's lines in the bench summary. */
export function loadSummary(n: LoadResult, verdict: (ok: boolean) => string): string[] {
  const w = n.writes;
  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
  return [
    `  (n) Load: streaming runs with readers, plus an open-loop writer, for ${n.seconds} s (API compiled, its own process)`,
    `      writes sent ${w.sent}: 201 ${w.created}, 503 ${w.shed}, other ${w.other}; answered p50 ${w.p50.toFixed(0)} ms, p99 ${w.p99.toFixed(0)} ms   (aim p99 < 2000 ms: ${verdict(w.p99 < 2000)})`,
    ...(['message', 'artifact'] as const).map(
      (k) =>
        `        ${k === 'message' ? 'message appends ' : 'artifact creates'}               p50 ${w.byKind[k].p50.toFixed(0)} ms, p99 ${w.byKind[k].p99.toFixed(0)} ms   (aim of issue 50, p99 < ${SUSTAIN_P99_MS} ms: ${verdict(w.byKind[k].p99 < SUSTAIN_P99_MS)})`,
    ),
    `      client timeouts (30 s)                 ${w.timeouts}   (aim 0: ${verdict(w.timeouts === 0)})`,
    `      writes answered 503 but stored         ${w.storedAfter503}   (aim 0: ${verdict(w.storedAfter503 === 0)})`,
    `      runs completed ${n.runs.completed}, failed ${n.runs.failed}; readers exact ${n.runs.exact}/${n.runs.readers}   (aim all: ${verdict(n.runs.readers > 0 && n.runs.exact === n.runs.readers)})`,
    `      API RSS start ${mb(n.rss.start)}, end (15 s after) ${mb(n.rss.end)}: ×${(n.rss.end / n.rss.start).toFixed(2)}   (aim ≤ 1.5: ${verdict(n.rss.end <= 1.5 * n.rss.start)})`,
    `      sustainable rate alone (p99 < 1 s, no 503): messages ${n.sustainable.message}/s, artifacts ${n.sustainable.artifact}/s`,
  ];
}
