import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/kernel/errors.js';
import { StakeholderOp } from '../../src/stakeholders/index.js';
import { briefingOf, diffGraphs } from '../../src/stakeholders/analysis.js';
import { compileDsl } from '../../src/stakeholders/dsl.js';
import { answerToOps, extractionSchema, parseAnswer } from '../../src/stakeholders/extraction.js';
import { applyOps, emptyGraph, viewOf, type Graph } from '../../src/stakeholders/graph.js';

const NOW = '2025-03-01T12:00:00.000Z';
const ctx = (now = NOW) => ({ now, newId: randomUUID, source: { type: 'manual' as const, id: null } });
const ops = (xs: unknown[]) => xs.map((x) => StakeholderOp.parse(x));
const apply = (g: Graph, xs: unknown[], now = NOW) => applyOps(g, ops(xs), ctx(now));
const byName = (g: Graph, name: string) => g.stakeholders.find((s) => s.name === name)!;
const limits = { stakeholder_limit: 100, interaction_limit: 100 };

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('expected an error');
}

describe('applyOps', () => {
  it('creates stakeholders by name, matches names case- and space-insensitively, and updates only the fields sent', () => {
    const a = apply(emptyGraph(), [
      { op: 'upsert_stakeholder', name: 'Dana  Lee', role: 'CFO', influence: 'high' },
      { op: 'upsert_stakeholder', name: 'dana lee', stance: 'opposed' },
    ]);
    expect(a.graph.stakeholders).toHaveLength(1);
    expect(a.graph.stakeholders[0]).toMatchObject({
      name: 'dana lee',
      role: 'CFO',
      influence: 'high',
      stance: 'opposed',
      organization: null,
    });
    expect(a.changes.added.stakeholders).toEqual([a.graph.stakeholders[0].id]);
    expect(a.changes.updated.stakeholders).toEqual([]);
  });

  it('creates participants named by an interaction or edge, and refuses an unknown id without changing the input graph', () => {
    const a = apply(emptyGraph(), [
      { op: 'add_interaction', summary: 'Budget review', participants: ['Dana', 'Sam'], sentiment: 'negative' },
      { op: 'set_edge', from: 'Dana', to: 'Ari', polarity: 'positive' },
    ]);
    expect(a.graph.stakeholders.map((s) => s.name).sort()).toEqual(['Ari', 'Dana', 'Sam']);
    expect(a.graph.interactions[0]).toMatchObject({
      kind: 'note',
      sentiment: 'negative',
      occurred_at: NOW,
      source: { type: 'manual', id: null },
    });
    const before = JSON.stringify(a.graph);
    const err = errorOf(() =>
      apply(a.graph, [
        { op: 'upsert_stakeholder', name: 'Zoe' },
        { op: 'set_edge', from: randomUUID(), to: 'Dana', polarity: 'negative' },
      ]),
    );
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^ops\[1\] \(set_edge\): no stakeholder/);
    expect(JSON.stringify(a.graph)).toBe(before);
  });

  it('keeps one edge per pair whichever direction is named, and updates it in place', () => {
    const a = apply(emptyGraph(), [
      { op: 'set_edge', from: 'A', to: 'B', polarity: 'positive', strength: 0.9, relation: 'allies' },
    ]);
    const b = apply(a.graph, [{ op: 'set_edge', from: 'B', to: 'A', polarity: 'negative' }]);
    expect(b.graph.edges).toHaveLength(1);
    expect(b.graph.edges[0]).toMatchObject({
      id: a.graph.edges[0].id,
      polarity: 'negative',
      strength: 0.9,
      relation: 'allies',
      from: byName(b.graph, 'B').id,
    });
    expect(b.changes.updated.edges).toEqual([a.graph.edges[0].id]);
    expect(
      errorOf(() => apply(b.graph, [{ op: 'set_edge', from: 'A', to: 'a', polarity: 'neutral' }])).message,
    ).toMatch(/two different stakeholders/);
  });

  it('removing a stakeholder removes its edges, drops it from interactions and risks, and drops interactions left empty', () => {
    const a = apply(emptyGraph(), [
      { op: 'add_interaction', summary: 'one to one', participants: ['A'] },
      { op: 'add_interaction', summary: 'group', participants: ['A', 'B'] },
      { op: 'set_edge', from: 'A', to: 'B', polarity: 'negative' },
      { op: 'upsert_risk', title: 'Churn', stakeholders: ['A', 'B'] },
    ]);
    const b = apply(a.graph, [{ op: 'remove_stakeholder', stakeholder: 'a' }]);
    expect(b.graph.stakeholders.map((s) => s.name)).toEqual(['B']);
    expect(b.graph.edges).toEqual([]);
    expect(b.graph.interactions.map((i) => i.summary)).toEqual(['group']);
    expect(b.graph.interactions[0].participants).toEqual([byName(b.graph, 'B').id]);
    expect(b.graph.risks[0].stakeholders).toEqual([byName(b.graph, 'B').id]);
    expect(b.changes.removed.interactions).toHaveLength(1);
    expect(errorOf(() => apply(b.graph, [{ op: 'remove_stakeholder', stakeholder: 'Nobody' }])).message).toMatch(
      /no stakeholder named "Nobody"/,
    );
  });

  it('renames by id, refusing a name another stakeholder has (409)', () => {
    const a = apply(emptyGraph(), [
      { op: 'upsert_stakeholder', name: 'A' },
      { op: 'upsert_stakeholder', name: 'B' },
    ]);
    const id = byName(a.graph, 'A').id;
    expect(
      apply(a.graph, [{ op: 'upsert_stakeholder', id, name: 'Alice' }])
        .graph.stakeholders.map((s) => s.name)
        .sort(),
    ).toEqual(['Alice', 'B']);
    expect(errorOf(() => apply(a.graph, [{ op: 'upsert_stakeholder', id, name: 'b' }])).status).toBe(409);
  });

  it('upserts risks by title and removes them by title or id; the summary is set', () => {
    const a = apply(emptyGraph(), [
      { op: 'upsert_risk', title: 'Budget freeze', severity: 'high' },
      { op: 'upsert_risk', title: 'budget freeze', status: 'mitigated' },
      { op: 'set_summary', summary: 'S' },
    ]);
    expect(a.graph.risks).toHaveLength(1);
    expect(a.graph.risks[0]).toMatchObject({ severity: 'high', status: 'mitigated' });
    expect(a.changes.summary_changed).toBe(true);
    expect(apply(a.graph, [{ op: 'remove_risk', id: a.graph.risks[0].id }]).graph.risks).toEqual([]);
    expect(errorOf(() => apply(a.graph, [{ op: 'remove_risk', title: 'other' }])).status).toBe(400);
  });

  it('refuses a patch that would pass a size limit', () => {
    const many = Array.from({ length: 500 }, (_, i) => ({ op: 'upsert_risk', title: `risk ${i}` }));
    const a = apply(emptyGraph(), many);
    expect(errorOf(() => apply(a.graph, [{ op: 'upsert_risk', title: 'one more' }])).message).toMatch(
      /at most 500 risks/,
    );
  });

  it('viewOf ranks stakeholders by influence then activity, keeps the newest interactions and only edges inside the view', () => {
    const a = apply(emptyGraph(), [
      { op: 'upsert_stakeholder', name: 'Low', influence: 'low' },
      { op: 'upsert_stakeholder', name: 'High', influence: 'high' },
      { op: 'add_interaction', summary: 'old', participants: ['Busy'], occurred_at: '2025-01-01T00:00:00Z' },
      { op: 'add_interaction', summary: 'new', participants: ['Busy'], occurred_at: '2025-02-01T00:00:00Z' },
      { op: 'set_edge', from: 'High', to: 'Busy', polarity: 'positive' },
      { op: 'set_edge', from: 'High', to: 'Low', polarity: 'negative' },
    ]);
    const v = viewOf(a.graph, { stakeholder_limit: 2, interaction_limit: 1 });
    expect(v.stakeholders.map((s) => s.name)).toEqual(['High', 'Low']);
    expect(v.interactions.map((i) => i.summary)).toEqual(['new']);
    expect(v.edges.map((e) => e.polarity)).toEqual(['negative']);
    expect(v.truncated).toEqual({ stakeholders: true, interactions: true });
    expect(v.counts).toEqual({ stakeholders: 3, interactions: 2, edges: 2, risks: 0 });
  });
});

describe('the DSL', () => {
  it('compiles each statement to the ops the JSON form would send', () => {
    const out = compileDsl(
      [
        '# a comment',
        'stakeholder "Dana Lee" role="Chief \\"Money\\" Officer" influence=high stance=opposed tags="finance,exec"',
        'interaction "Dana Lee" "Sam" summary="Budget review" sentiment=negative at=2025-01-10 topics="budget, timeline"',
        'ally "Dana Lee" "Ari" relation="steering group" strength=0.8',
        'tension "Sam" "Ari"',
        'edge "Sam" "Dana Lee" polarity=neutral',
        'risk "Budget freeze" "Dana Lee" severity=high description="Q3 spend on hold"',
        'summary "Finance decides"',
        'remove edge "Sam" "Ari"',
      ].join('\n'),
    );
    expect(out).toEqual([
      {
        op: 'upsert_stakeholder',
        name: 'Dana Lee',
        role: 'Chief "Money" Officer',
        influence: 'high',
        stance: 'opposed',
        tags: ['finance', 'exec'],
      },
      {
        op: 'add_interaction',
        participants: ['Dana Lee', 'Sam'],
        summary: 'Budget review',
        sentiment: 'negative',
        occurred_at: '2025-01-10',
        topics: ['budget', 'timeline'],
      },
      { op: 'set_edge', from: 'Dana Lee', to: 'Ari', polarity: 'positive', relation: 'steering group', strength: 0.8 },
      { op: 'set_edge', from: 'Sam', to: 'Ari', polarity: 'negative' },
      { op: 'set_edge', from: 'Sam', to: 'Dana Lee', polarity: 'neutral' },
      {
        op: 'upsert_risk',
        title: 'Budget freeze',
        stakeholders: ['Dana Lee'],
        severity: 'high',
        description: 'Q3 spend on hold',
      },
      { op: 'set_summary', summary: 'Finance decides' },
      { op: 'remove_edge', from: 'Sam', to: 'Ari' },
    ]);
  });

  it.each([
    ['stakeholder "A" mood=happy', /dsl line 1: unknown attribute mood/],
    ['\nally "A"', /dsl line 2: ally joins two stakeholders/],
    ['stakeholder "A" influence=huge', /dsl line 1: influence: /],
    ['interaction "A" summary="unterminated', /dsl line 1: unterminated quote/],
    ['edge "A" "B" polarity=positive strength=strong', /dsl line 1: strong is not a number/],
    ['promote "A"', /dsl line 1: unknown statement promote/],
    ['# only a comment', /dsl: no statements/],
  ])('refuses %j with a message that names the line', (src, msg) => {
    const err = errorOf(() => compileDsl(src));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(msg);
  });
});

describe('diffGraphs', () => {
  it('lists added, removed and changed elements by id, field by field, within the limits', () => {
    const a = apply(emptyGraph(), [
      { op: 'upsert_stakeholder', name: 'A', stance: 'neutral' },
      { op: 'upsert_stakeholder', name: 'B' },
      { op: 'set_edge', from: 'A', to: 'B', polarity: 'positive' },
      { op: 'set_summary', summary: 'before' },
    ]).graph;
    const b = apply(
      a,
      [
        { op: 'upsert_stakeholder', name: 'A', stance: 'opposed' },
        { op: 'remove_stakeholder', stakeholder: 'B' },
        { op: 'add_interaction', summary: 'x', participants: ['C', 'D', 'E'] },
        { op: 'set_summary', summary: 'after' },
      ],
      '2025-03-02T00:00:00.000Z',
    ).graph;
    const d = diffGraphs(a, b, limits);
    expect(d.stakeholders.added.map((s) => s.name).sort()).toEqual(['C', 'D', 'E']);
    expect(d.stakeholders.removed.map((s) => s.name)).toEqual(['B']);
    expect(d.stakeholders.changed).toEqual([
      { id: byName(a, 'A').id, name: 'A', fields: { stance: { from: 'neutral', to: 'opposed' } } },
    ]);
    expect(d.edges.removed).toHaveLength(1);
    expect(d.interactions.added).toHaveLength(1);
    expect(d.summary).toEqual({ changed: true, from: 'before', to: 'after' });
    expect(d.counts.from.stakeholders).toBe(2);
    expect(d.truncated.stakeholders).toBe(false);
    const capped = diffGraphs(a, b, { stakeholder_limit: 2, interaction_limit: 1 });
    expect(capped.stakeholders.added).toHaveLength(2);
    expect(capped.truncated.stakeholders).toBe(true);
    expect(diffGraphs(b, b, limits).stakeholders).toEqual({ added: [], removed: [], changed: [] });
  });
});

describe('briefingOf', () => {
  const g = apply(emptyGraph(), [
    { op: 'upsert_stakeholder', name: 'Dana', stance: 'opposed', influence: 'high' },
    { op: 'upsert_stakeholder', name: 'Ari', influence: 'high' },
    { op: 'set_edge', from: 'Dana', to: 'Ari', polarity: 'positive', relation: 'steering group', strength: 0.8 },
    { op: 'set_edge', from: 'Dana', to: 'Sam', polarity: 'negative', relation: 'budget conflict', strength: 0.7 },
    {
      op: 'add_interaction',
      summary: 'Kickoff went well',
      participants: ['Dana', 'Lee'],
      sentiment: 'positive',
      occurred_at: '2025-01-05T00:00:00Z',
    },
    {
      op: 'add_interaction',
      summary: 'Argued about scope',
      participants: ['Dana', 'Kim'],
      sentiment: 'negative',
      occurred_at: '2025-01-20T00:00:00Z',
      topics: ['scope'],
    },
    { op: 'add_interaction', summary: 'Unrelated', participants: ['Ari', 'Kim'], occurred_at: '2025-02-20T00:00:00Z' },
    { op: 'upsert_risk', title: 'Budget freeze', severity: 'high', stakeholders: ['Dana'] },
    { op: 'upsert_risk', title: 'Closed one', status: 'closed', stakeholders: ['Dana'] },
  ]).graph;
  const dana = byName(g, 'Dana');

  it('reads alliances and tensions from edges, then from the sentiment of shared interactions', () => {
    const b = briefingOf(g, dana.id, new Date('2025-03-01T00:00:00Z'), 10)!;
    expect(b.interaction_count).toBe(2);
    expect(b.recent_interactions.map((i) => i.summary)).toEqual(['Argued about scope', 'Kickoff went well']);
    expect(b.last_interaction_at).toBe('2025-01-20T00:00:00.000Z');
    expect(b.alliances.map((a) => [a.stakeholder.name, a.inferred])).toEqual([
      ['Ari', false],
      ['Lee', true],
    ]);
    expect(b.tensions.map((a) => [a.stakeholder.name, a.inferred, a.relation])).toEqual([
      ['Sam', false, 'budget conflict'],
      ['Kim', true, null],
    ]);
    expect(b.risks.map((r) => r.title)).toEqual(['Budget freeze']);
  });

  it('suggests discussion points in order: risks, tensions, follow-ups, stance, reconnect, ally', () => {
    const b = briefingOf(g, dana.id, new Date('2025-03-01T00:00:00Z'), 10)!;
    expect(b.suggested_discussion_points.map((p) => p.reason)).toEqual([
      'risk',
      'tension',
      'tension',
      'follow_up',
      'stance',
      'reconnect',
      'alliance',
    ]);
    expect(b.suggested_discussion_points[0].text).toMatch(/Budget freeze/);
    expect(b.suggested_discussion_points[3].text).toBe('Follow up on scope (2025-01-20)');
    expect(b.suggested_discussion_points[5].text).toMatch(/40 days ago/);
    expect(b.suggested_discussion_points[6].text).toMatch(/Bring in Ari/);
    // Recent contact: no reconnect point; an unknown stakeholder: null.
    expect(
      briefingOf(g, dana.id, new Date('2025-01-25T00:00:00Z'), 10)!.suggested_discussion_points.map((p) => p.reason),
    ).not.toContain('reconnect');
    expect(briefingOf(g, randomUUID(), new Date(), 10)).toBeNull();
  });
});

describe('extraction', () => {
  it('asks for a schema whose every object field is required (strict structured output)', () => {
    const s = extractionSchema() as {
      $schema?: string;
      required: string[];
      properties: Record<string, { items: { required: string[]; properties: object; additionalProperties: boolean } }>;
    };
    expect(s.$schema).toBeUndefined();
    expect(s.required.sort()).toEqual(['interactions', 'relationships', 'risks', 'stakeholders', 'summary']);
    for (const k of ['stakeholders', 'interactions', 'relationships', 'risks']) {
      expect(s.properties[k].items.required.sort()).toEqual(Object.keys(s.properties[k].items.properties).sort());
      expect(s.properties[k].items.additionalProperties).toBe(false);
    }
  });

  it('turns an answer into ops: nulls keep what is known, strengths are clamped, empty names skipped', () => {
    const answer = parseAnswer(
      '```json\n' +
        JSON.stringify({
          stakeholders: [
            { name: 'Dana', role: null, organization: 'Acme', influence: 'high', stance: 'unknown' },
            { name: ' ', role: null, organization: null, influence: null, stance: 'neutral' },
          ],
          interactions: [
            {
              summary: 'Budget talk',
              participants: ['Dana', 'Sam', 'Dana'],
              sentiment: 'negative',
              topics: ['budget'],
            },
          ],
          relationships: [
            { from: 'Dana', to: 'Sam', polarity: 'negative', relation: 'budget', strength: 3 },
            { from: 'Dana', to: 'dana', polarity: 'positive', relation: null, strength: null },
          ],
          risks: [{ title: 'Freeze', description: null, severity: 'high', stakeholders: ['Dana'] }],
          summary: 'Tense',
        }) +
        '\n```',
    );
    const out = answerToOps(answer, NOW);
    expect(out).toEqual([
      { op: 'upsert_stakeholder', name: 'Dana', organization: 'Acme', influence: 'high' },
      {
        op: 'add_interaction',
        summary: 'Budget talk',
        participants: ['Dana', 'Sam'],
        sentiment: 'negative',
        kind: 'meeting',
        occurred_at: NOW,
        topics: ['budget'],
      },
      { op: 'set_edge', from: 'Dana', to: 'Sam', polarity: 'negative', relation: 'budget', strength: 1 },
      { op: 'upsert_risk', title: 'Freeze', severity: 'high', stakeholders: ['Dana'] },
      { op: 'set_summary', summary: 'Tense' },
    ]);
    for (const o of out) expect(StakeholderOp.safeParse(o).success).toBe(true);
    expect(() => parseAnswer('not json')).toThrow(/not JSON/);
    expect(() => parseAnswer('{"stakeholders": []}')).toThrow(/does not match the extraction schema/);
  });
});
