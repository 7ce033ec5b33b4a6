import { validationError } from '../kernel/errors.js';
import { StakeholderOp } from './schemas.js';
import { setOwn } from '../kernel/own.js';

/**
 * The stakeholder map's line DSL (docs/stakeholder-maps.md): one statement per line, compiled to
 * the same patch ops as the JSON form and validated by the same schema, so the DSL adds no second
 * way of changing a graph. A statement is a command, quoted or bare positional words, and
 * key=value attributes:
 *
 *   stakeholder "Dana Lee" role="CFO" organization=Acme influence=high stance=opposed
 *   interaction "Dana Lee" "Sam Ortiz" summary="Budget review" sentiment=negative at=2025-01-10 topics="budget,timeline"
 *   ally "Dana Lee" "Ari Chen" relation="same steering group" strength=0.8     (also: tension, edge … polarity=…)
 *   risk "Budget freeze" "Dana Lee" severity=high description="Q3 spend on hold"
 *   summary "Finance is the bottleneck"
 *   remove stakeholder|edge|risk|interaction …
 *
 * `#` starts a comment line. Errors name the line: `dsl line 3: …`.
 */
export function compileDsl(source: string): StakeholderOp[] {
  const ops: StakeholderOp[] = [];
  source.split(/\r?\n/).forEach((raw, idx) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const fail = (msg: string) => validationError(`dsl line ${idx + 1}: ${msg}`);
    const { words, attrs } = tokenize(line, fail);
    const [command, ...args] = words;
    const take = (allowed: string[]) => {
      for (const k of Object.keys(attrs))
        if (!allowed.includes(k))
          throw fail(`unknown attribute ${k} for ${command} (allowed: ${allowed.join(', ') || 'none'})`);
      return attrs;
    };
    const list = (s: string | undefined) =>
      s === undefined
        ? undefined
        : s
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean);
    const num = (s: string | undefined) => {
      if (s === undefined) return undefined;
      const n = Number(s);
      if (!Number.isFinite(n)) throw fail(`${s} is not a number`);
      return n;
    };
    const nullable = (s: string | undefined) => (s === undefined ? undefined : s === '' || s === 'null' ? null : s);
    let op: unknown;
    switch (command) {
      case 'stakeholder': {
        if (args.length !== 1) throw fail('stakeholder takes one name: stakeholder "Name" key=value…');
        const a = take(['role', 'organization', 'influence', 'stance', 'notes', 'tags']);
        op = {
          op: 'upsert_stakeholder',
          name: args[0],
          role: nullable(a.role),
          organization: nullable(a.organization),
          influence: nullable(a.influence),
          stance: a.stance,
          notes: nullable(a.notes),
          tags: list(a.tags),
        };
        break;
      }
      case 'interaction': {
        const a = take(['summary', 'kind', 'sentiment', 'at', 'topics']);
        op = {
          op: 'add_interaction',
          participants: args,
          summary: a.summary,
          kind: a.kind,
          sentiment: a.sentiment,
          occurred_at: a.at,
          topics: list(a.topics),
        };
        break;
      }
      case 'edge':
      case 'ally':
      case 'tension': {
        if (args.length !== 2) throw fail(`${command} joins two stakeholders: ${command} "A" "B"`);
        const a = take(command === 'edge' ? ['polarity', 'relation', 'strength'] : ['relation', 'strength']);
        const polarity = command === 'ally' ? 'positive' : command === 'tension' ? 'negative' : a.polarity;
        op = {
          op: 'set_edge',
          from: args[0],
          to: args[1],
          polarity,
          relation: nullable(a.relation),
          strength: num(a.strength),
        };
        break;
      }
      case 'risk': {
        if (args.length < 1) throw fail('risk needs a title: risk "Title" "Stakeholder"… key=value…');
        const a = take(['severity', 'status', 'description']);
        op = {
          op: 'upsert_risk',
          title: args[0],
          stakeholders: args.length > 1 ? args.slice(1) : undefined,
          severity: a.severity,
          status: a.status,
          description: nullable(a.description),
        };
        break;
      }
      case 'summary': {
        take([]);
        if (args.length !== 1) throw fail('summary takes one quoted text');
        op = { op: 'set_summary', summary: args[0] };
        break;
      }
      case 'remove': {
        take([]);
        const [what, ...rest] = args;
        if (what === 'stakeholder' && rest.length === 1) op = { op: 'remove_stakeholder', stakeholder: rest[0] };
        else if (what === 'edge' && rest.length === 2) op = { op: 'remove_edge', from: rest[0], to: rest[1] };
        else if (what === 'risk' && rest.length === 1)
          op = /^[0-9a-f-]{36}$/i.test(rest[0])
            ? { op: 'remove_risk', id: rest[0] }
            : { op: 'remove_risk', title: rest[0] };
        else if (what === 'interaction' && rest.length === 1) op = { op: 'remove_interaction', id: rest[0] };
        else
          throw fail('remove stakeholder "Name" | remove edge "A" "B" | remove risk "Title" | remove interaction <id>');
        break;
      }
      default:
        throw fail(
          `unknown statement ${command ?? ''} (stakeholder, interaction, edge, ally, tension, risk, summary, remove)`,
        );
    }
    const parsed = StakeholderOp.safeParse(dropUndefined(op as Record<string, unknown>));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw fail(`${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`);
    }
    ops.push(parsed.data);
  });
  if (!ops.length) throw validationError('dsl: no statements');
  if (ops.length > 500) throw validationError('dsl: at most 500 statements per patch');
  return ops;
}

const dropUndefined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** Splits a line into positional words and key=value attributes; "…" quotes (with \" and \\ escapes). */
function tokenize(line: string, fail: (m: string) => Error): { words: string[]; attrs: Record<string, string> } {
  const words: string[] = [];
  const attrs: Record<string, string> = {};
  let i = 0;
  const quoted = (): string => {
    let out = '';
    i++; // opening quote
    for (; i < line.length; i++) {
      const ch = line[i];
      if (ch === '\\' && i + 1 < line.length) {
        out += line[++i];
        continue;
      }
      if (ch === '"') {
        i++;
        return out;
      }
      out += ch;
    }
    throw fail('unterminated quote');
  };
  const bare = (): string => {
    const start = i;
    while (i < line.length && !/\s/.test(line[i]) && line[i] !== '"') i++;
    return line.slice(start, i);
  };
  while (i < line.length) {
    if (/\s/.test(line[i])) {
      i++;
      continue;
    }
    if (line[i] === '"') {
      words.push(quoted());
      continue;
    }
    const m = /^([a-z_]+)=/.exec(line.slice(i));
    if (m) {
      i += m[0].length;
      if (Object.hasOwn(attrs, m[1])) throw fail(`${m[1]} given twice`);
      setOwn(attrs, m[1], line[i] === '"' ? quoted() : bare());
      continue;
    }
    words.push(bare());
  }
  return { words, attrs };
}
