/*
 * What a run looks like, folded from its job stream alone (docs/streams.md, docs/pathways.md): each
 * pathway node's state, the reply by the reset rule (a retried turn replaces its text), the map
 * nodes' item counts and the terminal entry. Pure and dependency-free: the run page feeds it entries
 * as they arrive, and the unit tests (test/unit/console-run-state.test.ts) feed it recorded ones.
 */

/** A job stream entry's payload: `type` and the fields of that type (unknown types are ignored). */
export type Entry = { type: string; [field: string]: unknown };

/**
 * pending: not reached yet · running: started, not finished · waiting: a human node waiting for an
 * answer · done: finished (again, for a node visited more than once) · failed: its error failed the
 * run, or its error policy caught one · skipped: the run ended without reaching it.
 */
export type NodeState = 'pending' | 'running' | 'waiting' | 'done' | 'failed' | 'skipped';

export interface NodeRun {
  state: NodeState;
  /** Times the node started (a node in a while body runs more than once). */
  visits: number;
  node_type?: string;
  /** The branch it took (if: true/false, classify: a category, human: the answer). */
  handle?: string;
  /** A map node's items: done of total. */
  items?: { done: number; total: number };
  /** The error its policy caught (node_error), or the run's failure while it ran. */
  error?: string;
  /** The intervention it waits on (human nodes). */
  interventionId?: string;
  /** Its value as its last `node_finish` entry carried it (bounded: a large one is `{ truncated, preview }`). */
  output?: unknown;
  /** Index in the entry list of its last start and finish (the detail panel lists its entries). */
  startedAt?: number;
  finishedAt?: number;
}

interface Turn {
  attempt: number;
  text: string;
  /** Attempts replaced by a later one (each `reset` of this turn). */
  retries: number;
}

export interface RunView {
  nodes: Record<string, NodeRun>;
  turns: Map<number, Turn>;
  /** The reply as the reset rule shows it: the turns' texts in turn order. */
  reply: string;
  status: string | null;
  terminal: Entry | null;
  /** Tool calls and delegations, in order. */
  steps: Entry[];
  entries: number;
}

export function emptyRun(): RunView {
  return { nodes: {}, turns: new Map(), reply: '', status: null, terminal: null, steps: [], entries: 0 };
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** The node's id in an entry: `node` (its id), else `node_index` (graphs whose nodes have no ids). */
export function entryNode(e: Entry): string | undefined {
  return str(e.node) ?? (typeof e.node === 'number' ? String(e.node) : undefined) ?? num(e.node_index)?.toString();
}

function replyOf(turns: Map<number, Turn>): string {
  return [...turns.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, t]) => t.text)
    .join('');
}

/**
 * Applies one entry to the view, in place, and returns it (the page keeps one view per stream and
 * re-renders on a counter). `stream_reset` starts over: what follows is the whole stream.
 */
export function applyEntry(view: RunView, e: Entry): RunView {
  const at = view.entries++;
  const node = (id: string): NodeRun => (view.nodes[id] ??= { state: 'pending', visits: 0 });
  switch (e.type) {
    case 'stream_reset':
      Object.assign(view, emptyRun());
      break;
    case 'status':
      view.status = str(e.status) ?? view.status;
      break;
    case 'token': {
      const turn = num(e.turn) ?? 0;
      const attempt = num(e.attempt) ?? 1;
      const t = view.turns.get(turn) ?? { attempt, text: '', retries: 0 };
      // A token of an attempt older than the turn's latest reset never shows (rule 3).
      if (attempt < t.attempt) break;
      t.text += str(e.text) ?? '';
      view.turns.set(turn, t);
      view.reply = replyOf(view.turns);
      break;
    }
    case 'reset': {
      const turn = num(e.turn) ?? 0;
      const prev = view.turns.get(turn);
      view.turns.set(turn, { attempt: num(e.attempt) ?? 1, text: '', retries: (prev?.retries ?? 0) + (prev ? 1 : 0) });
      view.reply = replyOf(view.turns);
      break;
    }
    case 'tool':
    case 'delegate':
    case 'classified':
      view.steps.push(e);
      break;
    case 'node_start': {
      const id = entryNode(e);
      if (!id) break;
      const n = node(id);
      n.state = 'running';
      n.visits += 1;
      n.node_type = str(e.node_type) ?? n.node_type;
      n.startedAt = at;
      delete n.error;
      break;
    }
    case 'node_finish': {
      const id = entryNode(e);
      if (!id) break;
      const n = node(id);
      n.node_type = str(e.node_type) ?? n.node_type;
      n.handle = str(e.handle) ?? n.handle;
      if ('value' in e) n.output = e.value;
      n.finishedAt = at;
      n.interventionId = undefined;
      // A finish after a caught error (on_error continue or branch) keeps the node shown as failed.
      n.state = e.error_policy ? 'failed' : 'done';
      if (n.items) n.items = { ...n.items, done: n.items.total };
      break;
    }
    case 'node_error': {
      const id = entryNode(e);
      if (!id) break;
      const n = node(id);
      n.state = 'failed';
      n.error = str(e.error);
      break;
    }
    case 'node_progress': {
      const id = entryNode(e);
      if (!id) break;
      node(id).items = { done: num(e.done) ?? 0, total: num(e.total) ?? 0 };
      break;
    }
    case 'waiting':
    case 'paused': {
      view.status = e.type;
      // The entry names the intervention, not the node: the human nodes running now are the ones asking.
      for (const n of Object.values(view.nodes))
        if (n.state === 'running' && (n.node_type === 'human' || n.node_type === 'approval')) {
          n.state = 'waiting';
          n.interventionId = str(e.intervention_id);
        }
      break;
    }
    case 'intervention_answered': {
      view.status = 'running';
      for (const n of Object.values(view.nodes))
        if (n.state === 'waiting' && (!n.interventionId || n.interventionId === e.intervention_id)) n.state = 'running';
      break;
    }
    case 'complete':
    case 'error': {
      view.terminal = e;
      view.status = e.type === 'complete' ? 'completed' : 'failed';
      for (const n of Object.values(view.nodes))
        if (n.state === 'running' || n.state === 'waiting') {
          n.state = e.type === 'complete' ? 'done' : 'failed';
          if (e.type === 'error') n.error = str(e.message);
        }
      break;
    }
    default:
      break;
  }
  return view;
}

/** The state of a node: `pending` while the stream has not named it, `skipped` once the run ended without it. */
export const stateOf = (view: RunView, id: string): NodeState =>
  view.nodes[id]?.state ?? (view.terminal ? 'skipped' : 'pending');
