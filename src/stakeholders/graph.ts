import { conflict, validationError } from '../errors.js';
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

/**
 * Applies ops in order to a copy of `graph`. A bad op is a 400 that names it (`ops[3]: …`), and
 * nothing of the patch is applied. Stakeholder references are ids (must exist) or names
 * (created when absent, except by remove ops). Edges are one per pair of stakeholders
 * (undirected for matching; `from`/`to` keep the direction last given).
 */
export function applyOps(graph: Graph, ops: StakeholderOp[], ctx: ApplyContext): { graph: Graph; changes: Changes } {
  const g: Graph = structuredClone(graph);
  const changes = emptyChanges();
  const byId = new Map(g.stakeholders.map((s) => [s.id, s]));
  const byName = new Map(g.stakeholders.map((s) => [nameKey(s.name), s]));
  const mark = (kind: keyof Changes['added'], how: 'added' | 'updated' | 'removed', id: string) => {
    if (how === 'updated' && (changes.added[kind].includes(id) || changes.updated[kind].includes(id))) return;
    if (how === 'removed' && changes.added[kind].includes(id)) {
      changes.added[kind] = changes.added[kind].filter((x) => x !== id);
      changes.updated[kind] = changes.updated[kind].filter((x) => x !== id);
      return;
    }
    if (how === 'removed') changes.updated[kind] = changes.updated[kind].filter((x) => x !== id);
    changes[how][kind].push(id);
  };

  ops.forEach((op, i) => {
    const fail = (msg: string) => validationError(`ops[${i}] (${op.op}): ${msg}`);
    const create = (name: string): Stakeholder => {
      const s: Stakeholder = {
        id: ctx.newId(),
        name: name.trim().replace(/\s+/g, ' '),
        role: null,
        organization: null,
        influence: null,
        stance: 'unknown',
        notes: null,
        tags: [],
        created_at: ctx.now,
        updated_at: ctx.now,
      };
      g.stakeholders.push(s);
      byId.set(s.id, s);
      byName.set(nameKey(s.name), s);
      mark('stakeholders', 'added', s.id);
      return s;
    };
    /** A reference: a UUID must name a stakeholder of this map; a name is created when absent (if allowed). */
    const resolve = (ref: string, createMissing: boolean): Stakeholder => {
      if (UUID.test(ref)) {
        const s = byId.get(ref.toLowerCase());
        if (!s) throw fail(`no stakeholder ${ref} in this map`);
        return s;
      }
      const s = byName.get(nameKey(ref));
      if (s) return s;
      if (!createMissing) throw fail(`no stakeholder named "${ref}" in this map`);
      return create(ref);
    };

    switch (op.op) {
      case 'upsert_stakeholder': {
        let s = op.id ? byId.get(op.id.toLowerCase()) : op.name ? byName.get(nameKey(op.name)) : undefined;
        if (op.id && !s) throw fail(`no stakeholder ${op.id} in this map`);
        if (!s) s = create(op.name!);
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
        mark('stakeholders', 'updated', s.id);
        break;
      }
      case 'remove_stakeholder': {
        const s = resolve(op.stakeholder, false);
        g.stakeholders = g.stakeholders.filter((x) => x.id !== s.id);
        byId.delete(s.id);
        byName.delete(nameKey(s.name));
        mark('stakeholders', 'removed', s.id);
        // Its edges go; interactions and risks forget it (an interaction nobody is left in goes too).
        for (const e of g.edges.filter((x) => x.from === s.id || x.to === s.id)) mark('edges', 'removed', e.id);
        g.edges = g.edges.filter((x) => x.from !== s.id && x.to !== s.id);
        g.interactions = g.interactions.filter((x) => {
          if (!x.participants.includes(s.id)) return true;
          x.participants = x.participants.filter((p) => p !== s.id);
          mark('interactions', x.participants.length ? 'updated' : 'removed', x.id);
          return x.participants.length > 0;
        });
        for (const r of g.risks.filter((x) => x.stakeholders.includes(s.id))) {
          r.stakeholders = r.stakeholders.filter((p) => p !== s.id);
          mark('risks', 'updated', r.id);
        }
        break;
      }
      case 'add_interaction': {
        const participants = [...new Set(op.participants.map((p) => resolve(p, true).id))];
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
        g.interactions.push(it);
        mark('interactions', 'added', it.id);
        break;
      }
      case 'remove_interaction': {
        const id = op.id.toLowerCase();
        if (!g.interactions.some((x) => x.id === id)) throw fail(`no interaction ${op.id} in this map`);
        g.interactions = g.interactions.filter((x) => x.id !== id);
        mark('interactions', 'removed', id);
        break;
      }
      case 'set_edge': {
        const a = resolve(op.from, true);
        const b = resolve(op.to, true);
        if (a.id === b.id) throw fail('an edge joins two different stakeholders');
        const e = g.edges.find((x) => pairKey(x.from, x.to) === pairKey(a.id, b.id));
        if (e) {
          Object.assign(e, { from: a.id, to: b.id, polarity: op.polarity, updated_at: ctx.now });
          if (op.strength !== undefined) e.strength = op.strength;
          if (op.relation !== undefined) e.relation = op.relation || null;
          mark('edges', 'updated', e.id);
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
          mark('edges', 'added', n.id);
        }
        break;
      }
      case 'remove_edge': {
        const a = resolve(op.from, false);
        const b = resolve(op.to, false);
        const e = g.edges.find((x) => pairKey(x.from, x.to) === pairKey(a.id, b.id));
        if (!e) throw fail(`no edge between "${a.name}" and "${b.name}"`);
        g.edges = g.edges.filter((x) => x !== e);
        mark('edges', 'removed', e.id);
        break;
      }
      case 'upsert_risk': {
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
          mark('risks', 'added', r.id);
        } else mark('risks', 'updated', r.id);
        if (op.title) r.title = op.title;
        if (op.description !== undefined) r.description = op.description || null;
        if (op.severity) r.severity = op.severity;
        if (op.status) r.status = op.status;
        if (op.stakeholders) r.stakeholders = [...new Set(op.stakeholders.map((p) => resolve(p, true).id))];
        r.updated_at = ctx.now;
        break;
      }
      case 'remove_risk': {
        const r = op.id
          ? g.risks.find((x) => x.id === op.id!.toLowerCase())
          : g.risks.find((x) => nameKey(x.title) === nameKey(op.title!));
        if (!r) throw fail(`no risk ${op.id ?? `titled "${op.title}"`} in this map`);
        g.risks = g.risks.filter((x) => x !== r);
        mark('risks', 'removed', r.id);
        break;
      }
      case 'set_summary':
        if (g.summary !== op.summary) changes.summary_changed = true;
        g.summary = op.summary;
        break;
    }
  });
  for (const k of Object.keys(GRAPH_LIMITS) as (keyof typeof GRAPH_LIMITS)[]) {
    if (g[k].length > GRAPH_LIMITS[k])
      throw validationError(`a map holds at most ${GRAPH_LIMITS[k]} ${k} (this patch would make ${g[k].length})`);
  }
  return { graph: g, changes };
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
