import type { RetryPolicy } from '@temporalio/common';
import type { RunGraph } from '../../../src/temporal/definitions.js';
import type { RunState } from '../state.js';

export type RunNode = RunGraph['nodes'][number];

/** An expression (or a template to render) over the run's context, as the evaluate activities take it. */
export interface NodeExpression {
  expression: string;
  template?: string;
  /** An object or array whose string leaves are templates (a tree-shaped `input`): rendered instead of `expression`. */
  tree?: unknown;
  context: Record<string, unknown>;
}

/** What a handler is given for one visit of its node. */
export interface NodeCall {
  run: RunState;
  node: RunNode;
  /** The node's index in the graph. */
  at: number;
  /** The node's id (the designer's; an index graph's: its position). */
  id: string;
  /** The value that flows into this node on its branch: the previous node's output. */
  last: unknown;
  /** What the node's expressions and templates see: the run's input, `last` (this branch's), each node's value, loop counters. */
  context: Record<string, unknown>;
  /**
   * The node's own retry policy (`data.retry`: max_attempts, initial_interval_ms, backoff), for the
   * activities and child workflows of a node that does I/O; undefined: the interpreter's defaults.
   */
  retry?: RetryPolicy;
  /**
   * Evaluates the node's one expression: for a handler that `fusesEntries` (in a run started since
   * the fused-steps patch) together with the node's stream entries, in one local activity; else on
   * its own. At most once per visit.
   */
  evaluate: (e: NodeExpression) => Promise<unknown>;
}

/** What a visit produced: the node's value (the next `last`) and the handle of the edges to follow. */
export interface NodeOutcome {
  value: unknown;
  handle?: string;
}

/**
 * One node type of the interpreter. Handlers are deterministic workflow code: their I/O is
 * activities (workflows/pathways/activities.ts), timers and child workflows.
 */
export interface NodeHandler {
  run(c: NodeCall): Promise<NodeOutcome>;
  /**
   * The node's entries (the previous node_finish, its node_start) go out with its expression in
   * `evaluate`, not before the handler runs. Only transform and if do: changing this for a type
   * changes the commands its runs issue (a patch is needed).
   */
  fusesEntries?: boolean;
  /** The run stops after this node whatever edges leave it. */
  endsRun?: boolean;
}
