/**
 * The run-time helpers of the pathway interpreter and the node vocabulary they switch on: pure,
 * deterministic and free of dependencies (no zod, no Node built-ins, no clock or randomness).
 *
 * This is the `src/` module that `workflows/**` imports as a value (eslint.config.js). It is kept
 * apart from ./graph.ts (the zod shapes the API validates with) because every module a workflow
 * imports is evaluated again for each new workflow run in Temporal's reusable V8 context: zod in
 * the workflow bundle cost each run ~10 ms of the worker's CPU before its first command
 * (docs/decisions.md, "Workflow bundle"). ./graph.ts re-exports everything here.
 */

/**
 * What walking needs of a graph: ./graph.ts's CompiledGraph and the workflow's RunGraph are both one.
 * Declared here so this module imports nothing (./graph.ts imports it).
 */
interface WalkGraph {
  nodes: readonly { type: string; data?: Record<string, unknown> | null }[];
  edges: readonly (readonly [number, number, (string | null)?])[];
}

/** Every node type a pathway may use. Anything else is rejected by validation, so the interpreter never meets it. */
export const NODE_TYPES = [
  'start',
  'input',
  'neuron',
  'if',
  'while',
  'classify',
  'human',
  'transform',
  'delay',
  'output',
  'end',
  'join',
  'map',
  'http',
  'pathway',
] as const;
/** A canonical node type (aliases resolved). */
export type NodeType = (typeof NODE_TYPES)[number];

/**
 * Older or editor-facing names accepted as node types; compilation rewrites them to the canonical type so the
 * interpreter only switches on NODE_TYPES. `approval` is a `human` node. (`tool` is deliberately not
 * accepted: no interpreter step runs it, and a graph that validates must also run.)
 */
const NODE_TYPE_ALIASES: Readonly<Record<string, NodeType>> = { approval: 'human' };

/** The canonical type for a type name, or undefined when the name is not a pathway node type. */
export function canonicalType(type: string): NodeType | undefined {
  if ((NODE_TYPES as readonly string[]).includes(type)) return type as NodeType;
  return Object.hasOwn(NODE_TYPE_ALIASES, type) ? NODE_TYPE_ALIASES[type] : undefined;
}

/** Entry node types: a graph has exactly one (or, lacking both, exactly one node without incoming edges). */
export const ENTRY_TYPES: readonly NodeType[] = ['start', 'input'];

/** Fixed branch handles of `if` and `while`; `classify` branches on its own `data.categories`. */
const BRANCH_HANDLES = { if: ['true', 'false'], while: ['body', 'done'] } as const;

/**
 * The branch handles a node's outgoing edges must carry, or null for a non-branching node (one edge, no handle).
 * Shared by validator, compiler and interpreter so they agree on what a branch is.
 */
export function branchHandles(type: string, data?: Record<string, unknown> | null): string[] | null {
  const t = canonicalType(type);
  if (t === 'if' || t === 'while') return [...BRANCH_HANDLES[t]];
  if (t === 'human') return humanOptions(data);
  if (t !== 'classify') return null;
  const cats = data?.categories;
  return Array.isArray(cats) ? [...new Set(cats.filter((c): c is string => typeof c === 'string' && c !== ''))] : [];
}

/** Actions a person may answer a human node with: its `options` (strings or `{ label }`), default approve/reject. */
const DEFAULT_HUMAN_OPTIONS = ['approve', 'reject'];
export function humanOptions(data?: Record<string, unknown> | null): string[] {
  const opts = data?.options;
  if (!Array.isArray(opts) || opts.length === 0) return [...DEFAULT_HUMAN_OPTIONS];
  const labels = opts.map((o) =>
    typeof o === 'string'
      ? o
      : o && typeof o === 'object' && typeof (o as { label?: unknown }).label === 'string'
        ? (o as { label: string }).label
        : '',
  );
  return [...new Set(labels.filter((l) => l !== ''))];
}

/** Default and hard cap of `while.data.max_iterations`: a loop always ends, even when its condition never turns false. */
export const WHILE_DEFAULT_MAX_ITERATIONS = 10;
/** See WHILE_DEFAULT_MAX_ITERATIONS. Validation rejects larger values; the interpreter clamps defensively. */
export const WHILE_MAX_ITERATIONS_CAP = 100;

/** How many times the interpreter may take a while node's `body` branch per entry into the loop (default 10, cap 100). */
export function whileMaxIterations(data?: Record<string, unknown> | null): number {
  const n = data?.max_iterations;
  if (typeof n !== 'number' || !Number.isFinite(n)) return WHILE_DEFAULT_MAX_ITERATIONS;
  return Math.min(Math.max(Math.floor(n), 1), WHILE_MAX_ITERATIONS_CAP);
}

/**
 * The node the interpreter goes to after `nodeIndex`: the target index, or -1 when the run ends there. Branching
 * nodes match `handle` (a boolean is accepted for `if`); other nodes take their single edge and ignore `handle`.
 */
export function nextEdges(compiled: WalkGraph, nodeIndex: number, handle?: string | boolean): number {
  const node = compiled.nodes[nodeIndex];
  if (!node) throw new RangeError(`pathway has no node ${nodeIndex}`);
  const branching = branchHandles(node.type, node.data) !== null;
  const want = handle === undefined ? undefined : String(handle);
  for (const [s, t, h] of compiled.edges) {
    if (s === nodeIndex && (!branching || (h ?? undefined) === want)) return t;
  }
  // A human node with one plain edge continues on any answer.
  for (const [s, t, h] of compiled.edges) if (s === nodeIndex && (h ?? undefined) === undefined) return t;
  return -1;
}

/**
 * Every node the interpreter goes to after `nodeIndex` (parallel branches: several unlabelled edges
 * of a non-branching node run side by side): the targets in edge order, without terminals (-1).
 * Empty when the branch ends there. Branching nodes follow the edges of `handle`, as nextEdges.
 */
export function nextTargets(compiled: WalkGraph, nodeIndex: number, handle?: string | boolean): number[] {
  const node = compiled.nodes[nodeIndex];
  if (!node) throw new RangeError(`pathway has no node ${nodeIndex}`);
  const out: number[] = [];
  // A failed node whose error policy is `branch` follows its `error` edges.
  if (handle === 'error') {
    for (const [s, t, h] of compiled.edges)
      if (s === nodeIndex && h === 'error' && t >= 0 && !out.includes(t)) out.push(t);
    return out;
  }
  if (branchHandles(node.type, node.data) !== null) {
    const t = nextEdges(compiled, nodeIndex, handle);
    return t >= 0 ? [t] : [];
  }
  for (const [s, t, h] of compiled.edges)
    if (s === nodeIndex && h !== 'error' && t >= 0 && !out.includes(t)) out.push(t);
  return out;
}

/** The nodes reachable from `from` along any edge (itself included only through a cycle). */
export function reachableFrom(compiled: WalkGraph, from: number): Set<number> {
  const seen = new Set<number>();
  const stack = [from];
  while (stack.length) {
    const n = stack.pop() as number;
    for (const [s, t] of compiled.edges) {
      if (s === n && t >= 0 && !seen.has(t)) {
        seen.add(t);
        stack.push(t);
      }
    }
  }
  return seen;
}

/** A join node's mode: `all` (default) waits for every branch that can still reach it, `any` takes the first. */
export const joinMode = (data?: Record<string, unknown> | null): 'all' | 'any' =>
  data?.mode === 'any' ? 'any' : 'all';

/** A map node's default and largest `concurrency` (child runs in flight at once). */
export const MAP_DEFAULT_CONCURRENCY = 4;
export const MAP_MAX_CONCURRENCY = 50;
/** Most items one map node runs (each is a child workflow in the run's history). */
export const MAP_MAX_ITEMS = 1000;

/** How many of a map node's items run at once: `concurrency` (default 4), clamped to 1..50. */
export function mapConcurrency(data?: Record<string, unknown> | null): number {
  const n = data?.concurrency;
  if (typeof n !== 'number' || !Number.isFinite(n)) return MAP_DEFAULT_CONCURRENCY;
  return Math.min(Math.max(Math.floor(n), 1), MAP_MAX_CONCURRENCY);
}

/** Default and cap of `http.data.timeout_ms` (one attempt's time, the whole request and answer). */
export const HTTP_DEFAULT_TIMEOUT_MS = 10_000;
/** See HTTP_DEFAULT_TIMEOUT_MS. Validation rejects larger values; the interpreter clamps defensively. */
export const HTTP_MAX_TIMEOUT_MS = 120_000;

/** One attempt's time of an `http` node: `timeout_ms` (default 10 s, at most 120 s). */
export function httpTimeoutMs(data?: Record<string, unknown> | null): number {
  const n = data?.timeout_ms;
  if (typeof n !== 'number' || !Number.isFinite(n)) return HTTP_DEFAULT_TIMEOUT_MS;
  return Math.min(Math.max(Math.floor(n), 1), HTTP_MAX_TIMEOUT_MS);
}

/** A node's value carried on its `node_finish` stream entry up to this many characters of JSON. */
export const NODE_VALUE_STREAM_CHARS = 4096;

/**
 * What a `node_finish` entry carries of the node's value (docs/streams.md): the value itself when
 * its JSON fits in NODE_VALUE_STREAM_CHARS, else `{ truncated: true, chars, preview }` (the whole
 * value is in the job's result `nodes` at the end). Pure and deterministic: the workflow calls it.
 */
export function streamValue(value: unknown): unknown {
  const json = JSON.stringify(value ?? null);
  if (json.length <= NODE_VALUE_STREAM_CHARS) return value ?? null;
  return { truncated: true, chars: json.length, preview: json.slice(0, 1000) };
}
