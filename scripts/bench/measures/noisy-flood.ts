/**
 * Workspace B's flood for bench (t) (scripts/bench/measures/noisy.ts), in a process of its own: B's client is
 * another tenant's program, so its 500 starts, its Retry-After waits and its 500 SSE readers must not
 * share an event loop with A's client, whose latencies the section measures. Started by
 * `startFlood` with its settings in NOISY_FLOOD (JSON); prints one JSON line with its outcome and exits.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { makeClient } from '../../../test/support/app.js';
import { dataOf, readSse } from '../../../test/support/sse.js';

interface FloodSettings {
  url: string;
  key: string;
  neuronId: string;
  runs: number;
  boundMs: number;
}
export interface FloodOutcome {
  completed: number;
  failed: number;
  refusals: number;
  /** The first failure of one of B's runs, if any. */
  first: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** B starts `runs` streaming runs at once, each read to its end; a start refused (429/503) is sent again after Retry-After. */
async function flood(s: FloodSettings, onBurst: () => void = () => undefined): Promise<FloodOutcome> {
  const api = makeClient(s.url);
  const deadline = performance.now() + s.boundMs;
  let refusals = 0;
  const bRun = async (i: number): Promise<void> => {
    while (performance.now() < deadline) {
      const res = await api.post(`/v1/neurons/${s.neuronId}/invoke`, s.key, { message: `flood ${i}`, stream: true });
      if (res.status === 429 || res.status === 503) {
        refusals++;
        const after = Number(res.headers.get('retry-after') ?? 1);
        await sleep(after * 1000 * (1 + Math.random()));
        continue;
      }
      if (res.status !== 202) throw new Error(`B's invoke answered ${res.status}: ${res.text}`);
      let end = false;
      await readSse(`${s.url}/v1/jobs/${String(res.body.job_id)}/stream`, {
        headers: { authorization: `Bearer ${s.key}` },
        timeoutMs: Math.max(1000, deadline - performance.now()),
        until: (events) => (end = events.some((e) => ['complete', 'error'].includes(String(dataOf(e).type)))),
      });
      if (!end) throw new Error(`B's run ${i} did not end in time`);
      return;
    }
    throw new Error(`B's run ${i} was not admitted within the bound`);
  };
  const all = Array.from({ length: s.runs }, (_, i) => bRun(i));
  onBurst();
  const settled = await Promise.allSettled(all);
  const completed = settled.filter((r) => r.status === 'fulfilled').length;
  const first = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  return {
    completed,
    failed: settled.length - completed,
    refusals,
    first: first ? (first.reason instanceof Error ? first.reason.message : String(first.reason)) : null,
  };
}

/**
 * Starts B's flood in a child process; `done` settles with its outcome, `pid` names it for the CPU split.
 * `inProcess` runs it in this process instead (as the section did before: B's client then shares the
 * event loop of A's, to compare).
 */
export function startFlood(
  s: FloodSettings,
  inProcess = false,
): { pid: number | undefined; started: Promise<void>; done: Promise<FloodOutcome> } {
  if (inProcess) return { pid: undefined, started: Promise.resolve(), done: flood(s) };
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
    env: { ...process.env, NOISY_FLOOD: JSON.stringify(s) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  // The child loads its modules first (a second or more): the burst starts when it says so.
  let burst: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (burst = resolve));
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (out.includes('"burst"')) burst();
  });
  const done = new Promise<FloodOutcome>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(line) as FloodOutcome);
      } catch {
        reject(new Error(`B's flood process exited ${String(code)} without an outcome: ${out.slice(-300)}`));
      }
      burst();
    });
  });
  return { pid: child.pid, started, done };
}

if (process.env.NOISY_FLOOD && process.argv[1] === fileURLToPath(import.meta.url)) {
  const outcome = await flood(JSON.parse(process.env.NOISY_FLOOD) as FloodSettings, () =>
    process.stdout.write(`${JSON.stringify({ event: 'burst' })}\n`),
  );
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
  process.exit(0);
}
