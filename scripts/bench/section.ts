/**
 * What a bench section is and what it is given. index.ts sets up the services, the in-process API,
 * the compiled worker (and the bare worker when (b) or (c) runs) once, then runs the selected
 * sections of registry.ts in their order, each with this context; a section measures and returns
 * its block of the summary, which index.ts prints at the end in the summary's own order.
 */
import type { TestApp, TestClient } from '../../test/support/app.js';
import type { ScriptedOpenAI } from '../../test/support/scripted-openai.js';
import type { Bare } from './bare.js';
import type { Workspace } from './support.js';

/**
 * The API of (h), (i), (k), (n) and (t) as production runs it: the compiled server (`npm run build`,
 * `node dist/api/server.js`) in a process of its own on the bench's stores, so its RSS is the
 * API's alone (the provider and the readers stay in the bench process).
 */
export interface ServedApi {
  client: TestClient;
  pid: number | undefined;
  startRss: number;
}

/** A process the bench started; `stop` sends SIGTERM and waits for the exit (a no-op once exited). */
export interface Child {
  pid: number | undefined;
  stop(): Promise<void>;
}

export interface BenchContext {
  /** The API inside the bench process (startTestApp): its registry, store clients and Temporal client. */
  app: TestApp;
  /** The bench workspace every section runs in (some build more of their own). */
  ws: Workspace;
  /** The scripted OpenAI-compatible provider; each section sets its own default reply. */
  llm: ScriptedOpenAI;
  /** The bare one-activity workflow's worker: started when (b) or (c) is selected. */
  bare: Bare | undefined;
  /** The compiled platform worker now running (a section may replace it: restartWorker). */
  worker: Child;
  /** The platform worker's /metrics (its MongoDB command counters). */
  workerMetricsUrl: string;
  /** Stops the platform worker and starts a fresh one (the soak starts from fresh processes). */
  restartWorker(): Promise<void>;
  /** Starts a compiled API process on the bench's stores (stopped at the end if the section does not). */
  startApi(env?: Record<string, string>): Promise<ServedApi & { stop(): Promise<void> }>;
  /** Adds a step to the bench's cleanup (run in reverse order at the end, errors only printed). */
  onCleanup(fn: () => Promise<unknown>): void;
  /** Whether BENCH_ONLY selects this letter (every letter when BENCH_ONLY is unset). */
  runs(letter: string): boolean;
}

export interface BenchSection {
  /** The letter BENCH_ONLY selects it by. */
  letter: string;
  /** Other letters that select it too: (i) is measured during (h). */
  alsoBy?: string[];
  /** One line: what it measures (comments and NOTES; the printed lines are the section's own). */
  title: string;
  /** It runs no platform worker and builds nothing: (m) and (s) (when only such sections are selected). */
  noWorker?: boolean;
  /** It needs the bare one-activity workflow's worker: (b) and (c). */
  needsBare?: boolean;
  /** Measures and returns the section's block of the summary (its lines, without the blank line before). */
  run(ctx: BenchContext): Promise<string[]>;
}
