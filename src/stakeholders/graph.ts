import { conflict, validationError } from '../kernel/errors.js';
import type { Changes, Counts, Edge, GraphLimits, Interaction, Risk, Stakeholder, StakeholderOp } from './schemas.js';

/**
 * The live stakeholder graph (docs/stakeholder-maps.md) and the one function that changes it.
 * Pure: the service loads the newest revision, applies a patch here and claims the next
 * revision with the result, so every writer (patch route, DSL, meeting extraction) goes through
 * applyOps and the same checks.
 */
export interface Graph {
  summary: string;
  stakeholders: Stakeholder[];
  interactions: Interaction[];
  edges: Edge[];
  risks: Risk[];
}

/** Sizes past which a patch is refused (400): one graph is one stored document. */
const GRAPH_LIMITS = { stakeholders: 1000, interactions: 5000, edges: 5000, risks: 500 } as const;

export const emptyGraph = (): Graph => ({ summary: '', stakeholders: [], interactions: [], edges: [], risks: [] });

export const countsOf = (g: Graph): Counts => ({
  stakeholders: g.stakeholders.length,
  interactions: g.interactions.length,
  edges: g.edges.length,
  risks: g.risks.length,
});

/** Names match case- and space-insensitively (one stakeholder per name in a map). */
const nameKey = (name: string): string => name.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const pairKey = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`);

export interface ApplyContext {
  /** ISO time written on what this patch creates or changes. */
  now: string;
  newId: () => string;
  /** Recorded on interactions this patch adds. */
  source: Interaction['source'];
}

const emptyChanges = (): Changes => ({
  added: { stakeholders: [], interactions: [], edges: [], risks: [] },
  updated: { stakeholders: [], interactions: [], edges: [], risks: [] },
  removed: { stakeholders: [], interactions: [], edges: [], risks: [] },
  summary_changed: false,
});

/** What a patch works on: the copy being changed, its stakeholder indexes and what changed so far. */
interface Patch {
  g: Graph;
  changes: Changes;
  byId: Map<string, Stakeholder>;
  byName: Map<string, Stakeholder>;
  ctx: ApplyContext;
}

/** The error of the op at hand, naming it (`ops[3] (set_edge): …`). */
type Fail = (msg: string) => Error;

type OpOf<K extends StakeholderOp['op']> = Extract<StakeholderOp, { op: K }>;

/** Records that an item was added, updated or removed (an item added then removed by one patch is neither). */
function mark(changes: Changes, kind: keyof Changes['added'], how: 'added' | 'updated' | 'removed', id: string): void {
  if (how === 'updated' && (changes.added[kind].includes(id) || changes.updated[kind].includes(id))) return;
  if (how === 'removed' && changes.added[kind].includes(id)) {
    changes.added[kind] = changes.added[kind].filter((x) => x !== id);
    changes.updated[kind] = changes.updated[kind].filter((x) => x !== id);
    return;
  }
  if (how === 'removed') changes.updated[kind] = changes.updated[kind].filter((x) => x !== id);
  changes[how][kind].push(id);
}

function createStakeholder(p: Patch, name: string): Stakeholder {
  const s: Stakeholder = {
    id: p.ctx.newId(),
    name: name.trim().replace(/\s+/g, ' '),
    role: null,
    organization: null,
    influence: null,
    stance: 'unknown',
    notes: null,
    tags: [],
    created_at: p.ctx.now,
    updated_at: p.ctx.now,
  };
  p.g.stakeholders.push(s);
  p.byId.set(s.id, s);
  p.byName.set(nameKey(s.name), s);
  mark(p.changes, 'stakeholders', 'added', s.id);
  return s;
}

/** A reference: a UUID must name a stakeholder of this map; a name is created when absent (if allowed). */
function resolveRef(p: Patch, fail: Fail, ref: string, createMissing: boolean): Stakeholder {
  if (UUID.test(ref)) {
    const s = p.byId.get(ref.toLowerCase());
    if (!s) throw fail(`no stakeholder ${ref} in this map`);
    return s;
  }
  const s = p.byName.get(nameKey(ref));
  if (s) return s;
  if (!createMissing) throw fail(`no stakeholder named "${ref}" in this map`);
  return createStakeholder(p, ref);
}

function upsertStakeholder(p: Patch, fail: Fail, op: OpOf<'upsert_stakeholder'>, i: number): void {
  const { byId, byName, ctx } = p;
  let s = op.id ? byId.get(op.id.toLowerCase()) : op.name ? byName.get(nameKey(op.name)) : undefined;
  if (op.id && !s) throw fail(`no stakeholder ${op.id} in this map`);
  if (!s) s = createStakeholder(p, op.name!);
  else if (op.name && nameKey(op.name) !== nameKey(s.name)) {
    const other = byName.get(nameKey(op.name));
    if (other && other.id !== s.id)
      throw conflict(`ops[${i}] (upsert_stakeholder): another stakeholder is named "${op.name}"`);
    byName.delete(nameKey(s.name));
    s.name = op.name.trim().replace(/\s+/g, ' ');
    byName.set(nameKey(s.name), s);
  } else if (op.name) s.name = op.name.trim().replace(/\s+/g, ' ');
  if (op.role !== undefined) s.role = op.role || null;
  if (op.organization !== undefined) s.organization = op.organization || null;
  if (op.influence !== undefined) s.influence = op.influence;
  if (op.stance !== undefined) s.stance = op.stance;
  if (op.notes !== undefined) s.notes = op.notes || null;
  if (op.tags !== undefined) s.tags = [...new Set(op.tags)];
  s.updated_at = ctx.now;
  mark(p.changes, 'stakeholders', 'updated', s.id);
}

function removeStakeholder(p: Patch, fail: Fail, op: OpOf<'remove_stakeholder'>): void {
  const { g, changes } = p;
  const s = resolveRef(p, fail, op.stakeholder, false);
  g.stakeholders = g.stakeholders.filter((x) => x.id !== s.id);
  p.byId.delete(s.id);
  p.byName.delete(nameKey(s.name));
  mark(changes, 'stakeholders', 'removed', s.id);
  // Its edges go; interactions and risks forget it (an interaction nobody is left in goes too).
  for (const e of g.edges.filter((x) => x.from === s.id || x.to === s.id)) mark(changes, 'edges', 'removed', e.id);
  g.edges = g.edges.filter((x) => x.from !== s.id && x.to !== s.id);
  g.interactions = g.interactions.filter((x) => {
    if (!x.participants.includes(s.id)) return true;
    x.participants = x.participants.filter((q) => q !== s.id);
    mark(changes, 'interactions', x.participants.length ? 'updated' : 'removed', x.id);
    return x.participants.length > 0;
  });
  for (const r of g.risks.filter((x) => x.stakeholders.includes(s.id))) {
    r.stakeholders = r.stakeholders.filter((q) => q !== s.id);
    mark(changes, 'risks', 'updated', r.id);
  }
}

function addInteraction(p: Patch, fail: Fail, op: OpOf<'add_interaction'>): void {
  const { ctx } = p;
  const participants = [...new Set(op.participants.map((q) => resolveRef(p, fail, q, true).id))];
  const it: Interaction = {
    id: ctx.newId(),
    occurred_at: op.occurred_at ? new Date(op.occurred_at).toISOString() : ctx.now,
    kind: op.kind ?? (ctx.source.type === 'manual' ? 'note' : 'meeting'),
    summary: op.summary,
    participants,
    sentiment: op.sentiment ?? 'neutral',
    topics: [...new Set(op.topics ?? [])],
    source: ctx.source,
    created_at: ctx.now,
  };
  p.g.interactions.push(it);
  mark(p.changes, 'interactions', 'added', it.id);
}

function removeInteraction(p: Patch, fail: Fail, op: OpOf<'remove_interaction'>): void {
  const id = op.id.toLowerCase();
  if (!p.g.interactions.some((x) => x.id === id)) throw fail(`no interaction ${op.id} in this map`);
  p.g.interactions = p.g.interactions.filter((x) => x.id !== id);
  mark(p.changes, 'interactions', 'removed', id);
}

function setEdge(p: Patch, fail: Fail, op: OpOf<'set_edge'>): void {
  const { g, ctx } = p;
  const a = resolveRef(p, fail, op.from, true);
  const b = resolveRef(p, fail, op.to, true);
  if (a.id === b.id) throw fail('an edge joins two different stakeholders');
  const e = g.edges.find((x) => pairKey(x.from, x.to) === pairKey(a.id, b.id));
  if (e) {
    Object.assign(e, { from: a.id, to: b.id, polarity: op.polarity, updated_at: ctx.now });
    if (op.strength !== undefined) e.strength = op.strength;
    if (op.relation !== undefined) e.relation = op.relation || null;
    mark(p.changes, 'edges', 'updated', e.id);
  } else {
    const n: Edge = {
      id: ctx.newId(),
      from: a.id,
      to: b.id,
      polarity: op.polarity,
      strength: op.strength ?? 0.5,
      relation: op.relation || null,
      updated_at: ctx.now,
    };
    g.edges.push(n);
    mark(p.changes, 'edges', 'added', n.id);
  }
}

function removeEdge(p: Patch, fail: Fail, op: OpOf<'remove_edge'>): void {
  const a = resolveRef(p, fail, op.from, false);
  const b = resolveRef(p, fail, op.to, false);
  const e = p.g.edges.find((x) => pairKey(x.from, x.to) === pairKey(a.id, b.id));
  if (!e) throw fail(`no edge between "${a.name}" and "${b.name}"`);
  p.g.edges = p.g.edges.filter((x) => x !== e);
  mark(p.changes, 'edges', 'removed', e.id);
}

function upsertRisk(p: Patch, fail: Fail, op: OpOf<'upsert_risk'>): void {
  const { g, ctx } = p;
  let r = op.id
    ? g.risks.find((x) => x.id === op.id!.toLowerCase())
    : g.risks.find((x) => nameKey(x.title) === nameKey(op.title!));
  if (op.id && !r) throw fail(`no risk ${op.id} in this map`);
  if (!r) {
    r = {
      id: ctx.newId(),
      title: op.title!,
      description: null,
      severity: 'medium',
      status: 'open',
      stakeholders: [],
      updated_at: ctx.now,
    };
    g.risks.push(r);
    mark(p.changes, 'risks', 'added', r.id);
  } else mark(p.changes, 'risks', 'updated', r.id);
  if (op.title) r.title = op.title;
  if (op.description !== undefined) r.description = op.description || null;
  if (op.severity) r.severity = op.severity;
  if (op.status) r.status = op.status;
  if (op.stakeholders) r.stakeholders = [...new Set(op.stakeholders.map((q) => resolveRef(p, fail, q, true).id))];
  r.updated_at = ctx.now;
}

function removeRisk(p: Patch, fail: Fail, op: OpOf<'remove_risk'>): void {
  const { g } = p;
  const r = op.id
    ? g.risks.find((x) => x.id === op.id!.toLowerCase())
    : g.risks.find((x) => nameKey(x.title) === nameKey(op.title!));
  if (!r) throw fail(`no risk ${op.id ?? `titled "${op.title}"`} in this map`);
  g.risks = g.risks.filter((x) => x !== r);
  mark(p.changes, 'risks', 'removed', r.id);
}

/** Applies one op (the `i`th of its patch) to the patch's graph. */
function applyOp(p: Patch, op: StakeholderOp, i: number): void {
  const fail: Fail = (msg) => validationError(`ops[${i}] (${op.op}): ${msg}`);
  switch (op.op) {
    case 'upsert_stakeholder':
      return upsertStakeholder(p, fail, op, i);
    case 'remove_stakeholder':
      return removeStakeholder(p, fail, op);
    case 'add_interaction':
      return addInteraction(p, fail, op);
    case 'remove_interaction':
      return removeInteraction(p, fail, op);
    case 'set_edge':
      return setEdge(p, fail, op);
    case 'remove_edge':
      return removeEdge(p, fail, op);
    case 'upsert_risk':
      return upsertRisk(p, fail, op);
    case 'remove_risk':
      return removeRisk(p, fail, op);
    case 'set_summary':
      if (p.g.summary !== op.summary) p.changes.summary_changed = true;
      p.g.summary = op.summary;
      return;
  }
}

/**
 * Applies ops in order to a copy of `graph`. A bad op is a 400 that names it (`ops[3]: …`), and
 * nothing of the patch is applied. Stakeholder references are ids (must exist) or names
 * (created when absent, except by remove ops). Edges are one per pair of stakeholders
 * (undirected for matching; `from`/`to` keep the direction last given).
 */
export function applyOps(graph: Graph, ops: StakeholderOp[], ctx: ApplyContext): { graph: Graph; changes: Changes } {
  const g: Graph = structuredClone(graph);
  const p: Patch = {
    g,
    changes: emptyChanges(),
    byId: new Map(g.stakeholders.map((s) => [s.id, s])),
    byName: new Map(g.stakeholders.map((s) => [nameKey(s.name), s])),
    ctx,
  };
  ops.forEach((op, i) => applyOp(p, op, i));
  for (const k of Object.keys(GRAPH_LIMITS) as (keyof typeof GRAPH_LIMITS)[]) {
    if (g[k].length > GRAPH_LIMITS[k])
      throw validationError(`a map holds at most ${GRAPH_LIMITS[k]} ${k} (this patch would make ${g[k].length})`);
  }
  return { graph: g, changes: p.changes };
}

const INFLUENCE_RANK = { high: 3, medium: 2, low: 1 } as const;

/** Stakeholders, most important first: influence, then how many interactions they were in, then name. */
export function rankStakeholders(g: Graph): Stakeholder[] {
  const seen = new Map<string, number>();
  for (const it of g.interactions) for (const p of it.participants) seen.set(p, (seen.get(p) ?? 0) + 1);
  const rank = (s: Stakeholder) => (s.influence ? INFLUENCE_RANK[s.influence] : 0);
  return [...g.stakeholders].sort(
    (a, b) =>
      rank(b) - rank(a) ||
      (seen.get(b.id) ?? 0) - (seen.get(a.id) ?? 0) ||
      a.name.localeCompare(b.name) ||
      (a.id < b.id ? -1 : 1),
  );
}

/** Interactions, newest first (ties: newest recorded first). */
export const newestFirst = (xs: Interaction[]): Interaction[] =>
  [...xs].sort(
    (a, b) =>
      b.occurred_at.localeCompare(a.occurred_at) || b.created_at.localeCompare(a.created_at) || (a.id < b.id ? 1 : -1),
  );

/**
 * The graph as returned: the first `stakeholder_limit` stakeholders (rankStakeholders), the newest
 * `interaction_limit` interactions, the edges between returned stakeholders, every risk, and the
 * full counts.
 */
export function viewOf(g: Graph, limits: GraphLimits) {
  const ranked = rankStakeholders(g);
  const stakeholders = ranked.slice(0, limits.stakeholder_limit);
  const ids = new Set(stakeholders.map((s) => s.id));
  const interactions = newestFirst(g.interactions).slice(0, limits.interaction_limit);
  return {
    summary: g.summary,
    stakeholders,
    interactions,
    edges: g.edges.filter((e) => ids.has(e.from) && ids.has(e.to)),
    risks: g.risks,
    counts: countsOf(g),
    truncated: {
      stakeholders: ranked.length > stakeholders.length,
      interactions: g.interactions.length > interactions.length,
    },
  };
}
