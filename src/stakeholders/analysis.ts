import type { Briefing, DiscussionPoint, GraphLimits, Interaction, Related, Risk, Stakeholder } from './schemas.js';
import { countsOf, newestFirst, rankStakeholders, type Graph } from './graph.js';

/**
 * What the graph says, computed (docs/stakeholder-maps.md): the difference between two states
 * of a map, and one stakeholder's briefing. Pure functions over graphs, so the routes, the unit
 * tests and any later consumer read the same answer.
 */

type Fields<T> = Record<string, { from: unknown; to: unknown }> & Partial<Record<keyof T, unknown>>;
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function fieldsChanged<T extends object>(a: T, b: T, keys: (keyof T)[]): Fields<T> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of keys) if (!same(a[k], b[k])) out[String(k)] = { from: a[k], to: b[k] };
  return out as Fields<T>;
}

function section<T extends { id: string }>(
  from: T[],
  to: T[],
  keys: (keyof T)[],
  nameOf: (x: T) => string,
  limit: number,
) {
  const before = new Map(from.map((x) => [x.id, x]));
  const after = new Map(to.map((x) => [x.id, x]));
  const added = to.filter((x) => !before.has(x.id));
  const removed = from.filter((x) => !after.has(x.id));
  const changed = to
    .filter((x) => before.has(x.id))
    .map((x) => ({ id: x.id, name: nameOf(x), fields: fieldsChanged(before.get(x.id)!, x, keys) }))
    .filter((c) => Object.keys(c.fields).length > 0);
  const truncated = added.length > limit || removed.length > limit || changed.length > limit;
  return {
    section: { added: added.slice(0, limit), removed: removed.slice(0, limit), changed: changed.slice(0, limit) },
    truncated,
  };
}

/**
 * From one state of a map to another, by element id: what was added, removed and changed (field
 * by field, `{ from, to }`). stakeholder_limit caps each stakeholder, edge and risk list;
 * interaction_limit caps each interaction list (newest first); `truncated` says when a cap cut.
 */
export function diffGraphs(from: Graph, to: Graph, limits: GraphLimits) {
  const names = new Map([...from.stakeholders, ...to.stakeholders].map((s) => [s.id, s.name]));
  const edgeName = (e: { from: string; to: string }) => `${names.get(e.from) ?? e.from} – ${names.get(e.to) ?? e.to}`;
  const st = section(
    rankStakeholders(from),
    rankStakeholders(to),
    ['name', 'role', 'organization', 'influence', 'stance', 'notes', 'tags'],
    (s) => s.name,
    limits.stakeholder_limit,
  );
  const it = section(
    newestFirst(from.interactions),
    newestFirst(to.interactions),
    ['occurred_at', 'kind', 'summary', 'participants', 'sentiment', 'topics'],
    (i) => i.summary.slice(0, 80),
    limits.interaction_limit,
  );
  const ed = section(
    from.edges,
    to.edges,
    ['from', 'to', 'polarity', 'strength', 'relation'],
    edgeName,
    limits.stakeholder_limit,
  );
  const rk = section(
    from.risks,
    to.risks,
    ['title', 'description', 'severity', 'status', 'stakeholders'],
    (r) => r.title,
    limits.stakeholder_limit,
  );
  return {
    stakeholders: st.section,
    interactions: it.section,
    edges: ed.section,
    risks: rk.section,
    summary: { changed: from.summary !== to.summary, from: from.summary, to: to.summary },
    counts: { from: countsOf(from), to: countsOf(to) },
    truncated: { stakeholders: st.truncated || ed.truncated || rk.truncated, interactions: it.truncated },
  };
}

const SENTIMENT = { positive: 1, neutral: 0, negative: -1 } as const;
const SEVERITY = { high: 3, medium: 2, low: 1 } as const;
const DAY = 86_400_000;
/** Days without an interaction after which the briefing suggests reconnecting. */
const RECONNECT_AFTER_DAYS = 30;
const MAX_POINTS = 8;

const brief = (s: Stakeholder): Related['stakeholder'] => ({
  id: s.id,
  name: s.name,
  role: s.role,
  organization: s.organization,
  influence: s.influence,
  stance: s.stance,
});

/**
 * One stakeholder's briefing, computed from the graph:
 * - recent interactions: the newest ones they took part in;
 * - alliances and tensions: their positive and negative edges (strongest first), then, for people
 *   with no edge to them, the net sentiment of interactions they shared (> 0 an alliance, < 0 a
 *   tension; `inferred: true`);
 * - risks: open risks that name them, most severe first;
 * - suggested discussion points, in this order: open risks (high and medium), tensions, negative
 *   recent interactions to follow up, an opposed or unknown stance, reconnecting when the last
 *   interaction is older than RECONNECT_AFTER_DAYS (or there is none), and the strongest influential
 *   ally to bring in; at most MAX_POINTS.
 */
export function briefingOf(
  g: Graph,
  stakeholderId: string,
  now: Date,
  interactionLimit: number,
): Omit<Briefing, 'resource_id' | 'brain_id' | 'revision'> | null {
  const me = g.stakeholders.find((s) => s.id === stakeholderId);
  if (!me) return null;
  const byId = new Map(g.stakeholders.map((s) => [s.id, s]));
  const mine = newestFirst(g.interactions.filter((i) => i.participants.includes(me.id)));

  // Shared interactions with each other stakeholder: how many, and their net sentiment.
  const shared = new Map<string, { n: number; net: number }>();
  for (const i of mine) {
    for (const p of i.participants) {
      if (p === me.id || !byId.has(p)) continue;
      const cur = shared.get(p) ?? { n: 0, net: 0 };
      cur.n += 1;
      cur.net += SENTIMENT[i.sentiment];
      shared.set(p, cur);
    }
  }
  const alliances: Related[] = [];
  const tensions: Related[] = [];
  const withEdge = new Set<string>();
  for (const e of g.edges) {
    if (e.from !== me.id && e.to !== me.id) continue;
    const other = byId.get(e.from === me.id ? e.to : e.from);
    if (!other) continue;
    withEdge.add(other.id);
    const rel: Related = {
      stakeholder: brief(other),
      relation: e.relation,
      strength: e.strength,
      inferred: false,
      shared_interactions: shared.get(other.id)?.n ?? 0,
    };
    if (e.polarity === 'positive') alliances.push(rel);
    else if (e.polarity === 'negative') tensions.push(rel);
  }
  for (const [id, { n, net }] of shared) {
    if (withEdge.has(id) || net === 0) continue;
    const rel: Related = {
      stakeholder: brief(byId.get(id)!),
      relation: null,
      strength: Math.min(1, Math.abs(net) / n),
      inferred: true,
      shared_interactions: n,
    };
    (net > 0 ? alliances : tensions).push(rel);
  }
  const order = (a: Related, b: Related) =>
    Number(a.inferred) - Number(b.inferred) ||
    b.strength - a.strength ||
    b.shared_interactions - a.shared_interactions ||
    a.stakeholder.name.localeCompare(b.stakeholder.name);
  alliances.sort(order);
  tensions.sort(order);

  const risks = g.risks
    .filter((r) => r.status === 'open' && r.stakeholders.includes(me.id))
    .sort((a, b) => SEVERITY[b.severity] - SEVERITY[a.severity] || a.title.localeCompare(b.title));
  const recent = mine.slice(0, interactionLimit);
  const last = mine[0]?.occurred_at ?? null;
  return {
    stakeholder: me,
    interaction_count: mine.length,
    last_interaction_at: last,
    recent_interactions: recent,
    alliances,
    tensions,
    risks,
    suggested_discussion_points: discussionPoints(me, { risks, tensions, alliances, recent, last, now }),
  };
}

function discussionPoints(
  me: Stakeholder,
  c: {
    risks: Risk[];
    tensions: Related[];
    alliances: Related[];
    recent: Interaction[];
    last: string | null;
    now: Date;
  },
): DiscussionPoint[] {
  const points: DiscussionPoint[] = [];
  for (const r of c.risks.filter((x) => x.severity !== 'low')) {
    points.push({
      text: `Address the ${r.severity}-severity risk "${r.title}"${r.description ? `: ${r.description}` : ''}`,
      reason: 'risk',
      refs: [r.id],
    });
  }
  for (const t of c.tensions.slice(0, 2)) {
    points.push({
      text: `Ease the tension with ${t.stakeholder.name}${t.relation ? ` (${t.relation})` : ''}`,
      reason: 'tension',
      refs: [t.stakeholder.id],
    });
  }
  for (const i of c.recent.filter((x) => x.sentiment === 'negative').slice(0, 2)) {
    const about = i.topics.length ? i.topics.join(', ') : i.summary.slice(0, 120);
    points.push({ text: `Follow up on ${about} (${i.occurred_at.slice(0, 10)})`, reason: 'follow_up', refs: [i.id] });
  }
  if (me.stance === 'opposed')
    points.push({
      text: `Understand ${me.name}'s objections and what would change their position`,
      reason: 'stance',
      refs: [me.id],
    });
  else if (me.stance === 'unknown')
    points.push({ text: `Find out where ${me.name} stands`, reason: 'stance', refs: [me.id] });
  if (!c.last)
    points.push({
      text: `No interaction with ${me.name} is recorded yet: arrange a first conversation`,
      reason: 'reconnect',
      refs: [me.id],
    });
  else {
    const days = Math.floor((c.now.getTime() - Date.parse(c.last)) / DAY);
    if (days > RECONNECT_AFTER_DAYS)
      points.push({
        text: `Reconnect: the last recorded interaction was ${days} days ago`,
        reason: 'reconnect',
        refs: [me.id],
      });
  }
  const ally = c.alliances.find((a) => a.stakeholder.influence === 'high') ?? c.alliances[0];
  if (ally)
    points.push({
      text: `Bring in ${ally.stakeholder.name} as an ally${ally.relation ? ` (${ally.relation})` : ''}`,
      reason: 'alliance',
      refs: [ally.stakeholder.id],
    });
  return points.slice(0, MAX_POINTS);
}
