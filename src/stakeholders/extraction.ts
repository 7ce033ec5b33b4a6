import { z } from 'zod';
import type { ChatMessage, JsonSchema } from '../llm/types.js';
import { ExtractionAnswer, type StakeholderOp } from './schemas.js';
import type { Graph } from './graph.js';

/**
 * The extraction step's model contract (docs/stakeholder-maps.md, Extraction): the JSON Schema
 * the model is asked to answer with (generated from the zod schema that checks the answer), the
 * prompt, and the translation of an answer into ordinary patch ops.
 */

/** Longest transcript text sent to the model (characters); the rest is cut and the cut is recorded on the job. */
export const MAX_TRANSCRIPT_CHARS = 60_000;

/** The answer's JSON Schema, without the `$schema` key (providers' strict modes accept the rest). */
export function extractionSchema(): JsonSchema {
  const { $schema: _drop, ...schema } = z.toJSONSchema(ExtractionAnswer) as Record<string, unknown>;
  return schema;
}

const INSTRUCTIONS = [
  'You maintain a stakeholder map from meeting transcripts.',
  'From the transcript, extract: the people (stakeholders) who took part or were discussed, with role, organization, influence (low, medium, high) and stance toward the work (supportive, neutral, opposed, unknown);',
  'the interactions it records (who was involved, a one-sentence summary, the sentiment: positive, neutral or negative, and short topics);',
  'relationships between two people with a polarity (positive: allies, negative: tension, neutral), a short relation and a strength from 0 to 1;',
  'risks to the work, with severity and the people involved; and a short updated summary of the stakeholder landscape.',
  'Use exactly the names already on the map when the same person is meant. Use null where the transcript does not say. Do not invent people.',
  'Answer with one JSON object that matches the given schema, and nothing else.',
].join(' ');

/** The messages of one extraction call: instructions, who is on the map already, then the transcript. */
export function extractionMessages(graph: Graph, transcript: string): ChatMessage[] {
  const known = graph.stakeholders
    .slice(0, 200)
    .map((s) => `- ${s.name}${s.role ? ` (${s.role})` : ''}`)
    .join('\n');
  return [
    { role: 'system', content: INSTRUCTIONS },
    {
      role: 'user',
      content: `People on the map:\n${known || '(none yet)'}\n\nCurrent summary: ${graph.summary || '(none)'}\n\nTranscript:\n${transcript}`,
    },
  ];
}

/** Parses and checks a model's answer (a fenced JSON block is accepted); throws with what was wrong. */
export function parseAnswer(text: string): ExtractionAnswer {
  let json: unknown;
  try {
    json = JSON.parse(text.trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
  } catch {
    throw new Error(`the model's answer is not JSON (${text.slice(0, 80)}…)`);
  }
  const parsed = ExtractionAnswer.safeParse(json);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new Error(`the model's answer does not match the extraction schema: ${i.path.join('.')}: ${i.message}`);
  }
  return parsed.data;
}

const cut = (s: string, n: number) => s.trim().replace(/\s+/g, ' ').slice(0, n);
const names = (xs: string[]) => [...new Set(xs.map((x) => cut(x, 200)).filter(Boolean))].slice(0, 50);

/**
 * An answer as patch ops: stakeholders upserted by name (a null field keeps what the map knows),
 * interactions added at `occurredAt` as meetings, relationships set, risks upserted by title, the
 * summary replaced when one was given. Empty names are skipped; strengths are clamped to 0..1.
 */
export function answerToOps(a: ExtractionAnswer, occurredAt: string): StakeholderOp[] {
  const ops: StakeholderOp[] = [];
  for (const s of a.stakeholders) {
    const name = cut(s.name, 200);
    if (!name) continue;
    ops.push({
      op: 'upsert_stakeholder',
      name,
      ...(s.role ? { role: cut(s.role, 200) } : {}),
      ...(s.organization ? { organization: cut(s.organization, 200) } : {}),
      ...(s.influence ? { influence: s.influence } : {}),
      ...(s.stance !== 'unknown' ? { stance: s.stance } : {}),
    });
  }
  for (const i of a.interactions) {
    const participants = names(i.participants);
    if (!participants.length || !i.summary.trim()) continue;
    ops.push({
      op: 'add_interaction',
      summary: cut(i.summary, 4000),
      participants,
      sentiment: i.sentiment,
      kind: 'meeting',
      occurred_at: occurredAt,
      topics: names(i.topics)
        .map((t) => t.slice(0, 60))
        .slice(0, 30),
    });
  }
  for (const r of a.relationships) {
    const [from, to] = [cut(r.from, 200), cut(r.to, 200)];
    if (!from || !to || from.toLowerCase() === to.toLowerCase()) continue;
    ops.push({
      op: 'set_edge',
      from,
      to,
      polarity: r.polarity,
      ...(r.relation ? { relation: cut(r.relation, 200) } : {}),
      ...(r.strength !== null && Number.isFinite(r.strength) ? { strength: Math.min(1, Math.max(0, r.strength)) } : {}),
    });
  }
  for (const r of a.risks) {
    const title = cut(r.title, 200);
    if (!title) continue;
    ops.push({
      op: 'upsert_risk',
      title,
      severity: r.severity,
      ...(r.description ? { description: cut(r.description, 4000) } : {}),
      stakeholders: names(r.stakeholders),
    });
  }
  if (a.summary?.trim()) ops.push({ op: 'set_summary', summary: a.summary.trim().slice(0, 20_000) });
  return ops.slice(0, 500);
}
