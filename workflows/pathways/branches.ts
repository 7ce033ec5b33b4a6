import * as wf from '@temporalio/workflow';
import { joinMode, reachableFrom } from '../../src/pathways/walk.js';
import { flush, visit } from './visit.js';
import { nodeId, type Branch, type RunState } from './state.js';

/**
 * Parallel branches and joins. A node with several plain outgoing edges starts one branch per edge,
 * each in its own cancellation scope, all running side by side in the workflow (their activities,
 * timers and child workflows in flight together). A branch that reaches a `join` waits there:
 * - `all` (default): the join fires once no branch still walking can reach it; its value is the
 *   arrivals keyed by the node each came from;
 * - `any`: the join fires on the first arrival; the branches still walking that could reach it are
 *   cancelled (their activities, timers and children are cancelled in Temporal).
 * A firing join starts one branch at the join. A branch that ends without a join just ends; the run
 * ends when every branch has.
 */

/** Walks a branch until it ends, splits, or arrives at a join. */
export async function walk(run: RunState, b: Branch): Promise<void> {
  const { graph } = run.input;
  while (b.at >= 0) {
    if (graph.nodes[b.at]?.type === 'join' && !b.entering) {
      await flush(run, b);
      arrive(run, b);
      return;
    }
    b.entering = false;
    const next = await visit(run, b);
    const from = nodeId(run, b.at);
    if (next.length === 1) {
      b.at = next[0];
      b.from = from;
      continue;
    }
    await flush(run, b);
    for (const at of next) spawn(run, { at, last: b.last, from, entering: false, carried: null, cancelled: false });
    return;
  }
  await flush(run, b);
}

/** Starts a branch in its own cancellation scope; its end (or failure) settles the joins. */
function spawn(run: RunState, b: Branch): void {
  const scope = new wf.CancellationScope();
  run.running.add(b);
  scopes.set(b, scope);
  void scope
    .run(() => walk(run, b))
    .then(
      () => settle(run, b),
      (err: unknown) => {
        if (!(b.cancelled && wf.isCancellation(err)) && run.failure === undefined) run.failure = err;
        settle(run, b);
      },
    );
}

/** Each branch's cancellation scope (workflow memory of this run only). */
const scopes = new WeakMap<Branch, wf.CancellationScope>();

function settle(run: RunState, b: Branch): void {
  run.running.delete(b);
  scopes.delete(b);
  if (run.failure !== undefined) {
    // One branch failed: the run fails with it, the others stop.
    for (const other of run.running) cancel(other);
    return;
  }
  fireJoins(run);
}

function cancel(b: Branch): void {
  b.cancelled = true;
  scopes.get(b)?.cancel();
}

/** Records a branch waiting at its join. */
function arrive(run: RunState, b: Branch): void {
  // The arriving branch has stopped walking: it no longer counts as one that can reach the join.
  run.running.delete(b);
  const list = run.arrivals.get(b.at) ?? [];
  list.push({ from: b.from ?? nodeId(run, b.at), value: b.last });
  run.arrivals.set(b.at, list);
  fireJoins(run);
}

/** Fires every join whose wait is over (see the module comment). */
export function fireJoins(run: RunState): void {
  const { graph } = run.input;
  const reach = (from: number) => reachOf(run, from);
  for (const [join, list] of [...run.arrivals.entries()].sort((a, b) => a[0] - b[0])) {
    if (list.length === 0) continue;
    const any = joinMode(graph.nodes[join]?.data) === 'any';
    if (!any) {
      const live = [...run.running].some((b) => b.at === join || reach(b.at).has(join));
      // Branches waiting at another join that leads here keep this one waiting, unless nothing walks at all.
      const waiting = [...run.arrivals.entries()].some(
        ([other, l]) => other !== join && l.length > 0 && reach(other).has(join),
      );
      if (live || (waiting && run.running.size > 0)) continue;
    } else {
      for (const b of run.running) if (b.at === join || reach(b.at).has(join)) cancel(b);
    }
    run.arrivals.set(join, []);
    const first = any ? list.slice(0, 1) : list;
    const value = Object.fromEntries(first.map((a) => [a.from, a.value]));
    spawn(run, { at: join, last: value, from: null, entering: true, carried: null, cancelled: false });
  }
}

/** Nodes reachable from a node, computed once per node and run. */
const reachCache = new WeakMap<RunState, Map<number, Set<number>>>();
function reachOf(run: RunState, from: number): Set<number> {
  let m = reachCache.get(run);
  if (!m) reachCache.set(run, (m = new Map()));
  let s = m.get(from);
  if (!s) m.set(from, (s = reachableFrom(run.input.graph, from)));
  return s;
}

/** Stops every branch still walking (the run failed). */
export function cancelAll(run: RunState): void {
  for (const b of run.running) cancel(b);
}

/** Waits until every parallel branch has ended; throws the first branch failure. */
export async function allBranchesEnded(run: RunState): Promise<void> {
  await wf.condition(() => run.running.size === 0);
  if (run.failure !== undefined) throw run.failure;
}
