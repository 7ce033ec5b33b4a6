import { templateExpressions } from './engine.js';

/**
 * Who may use a workspace secret or connection from a pathway `http` node (docs/pathways.md,
 * "Secrets"): the rules, checked when a graph is saved (src/pathways/service.ts) and again when
 * its node runs (src/pathways/http.ts). A secret is a privilege of the graph's saver, not of
 * whoever runs it: a graph gets a secret only when the person who saved that version may use it
 * under the secret's current policy, only towards the hosts the secret allows, and never inside
 * the URL's scheme, host or port.
 */

/** Whose saved graph a run is: the version's saver and what they were (or are) allowed. */
export interface GraphSaver {
  /** The saver (a user id; an API key id for platform keys); null: unknown (saved before savers were recorded). */
  userId: string | null;
  /** The saver was a workspace admin when they saved this version. */
  admin: boolean;
  /** The saver is (still) an editor or owner of the pathway, or an admin. */
  editor: boolean;
}

/** A secret's use policy as the checks read it (src/secrets/model.ts). */
export interface SecretUsePolicy {
  allowedHosts: string[] | null;
  usableBy: 'admins' | 'editors';
}

/** What the checks need to know of an integration a graph names under `connections.`. */
export interface ConnectionUse {
  per: 'user' | 'workspace';
}

const SECRET_REF = /\bsecrets\.(?:`([^`]+)`|([A-Za-z_][A-Za-z0-9_]*))/g;
const CONNECTION_REF = /\bconnections\.(?:`([^`]+)`|([A-Za-z0-9_]+))/g;
/** Any mention of the credential namespaces, however written (`$.secrets`, `$lookup($, "secrets")`). */
const ANY_CREDENTIAL = /secrets|connections/i;

/** The names a set of templates reads under `secrets.` and `connections.` (`secrets.NAME`, ``connections.`my-id` ``). */
export function referencedNames(templates: string[]): { secrets: string[]; connections: string[] } {
  const secrets = new Set<string>();
  const connections = new Set<string>();
  for (const t of templates)
    for (const expr of templateExpressions(t)) {
      for (const m of expr.matchAll(SECRET_REF)) secrets.add(m[1] ?? m[2]);
      for (const m of expr.matchAll(CONNECTION_REF)) connections.add(m[1] ?? m[2]);
    }
  return { secrets: [...secrets], connections: [...connections] };
}

/**
 * A URL template cut where its origin ends: `origin` holds the scheme, user info, host and port
 * (up to the first literal `/`, `?`, `#` or `\` after a literal `://`, or, without one, the first of
 * them at all), `rest` the path, query and fragment. The origin is rendered without secrets and
 * connections, so nothing secret can reach a host name (and, from there, DNS, an error message or
 * a log line).
 */
export function splitOrigin(template: string): { origin: string; rest: string } {
  const parts = template.split(/(\{\{[\s\S]*?\}\})/g);
  let at = 0;
  let afterScheme = -1;
  for (const p of parts) {
    if (!p.startsWith('{{')) {
      const i = p.indexOf('://');
      if (i >= 0) {
        afterScheme = at + i + 3;
        break;
      }
    }
    at += p.length;
  }
  at = 0;
  for (const p of parts) {
    if (!p.startsWith('{{')) {
      const from = Math.max(0, afterScheme - at);
      const m = /[/?#\\]/.exec(p.slice(from));
      if (m && (afterScheme >= 0 || at + from + m.index > 0)) {
        const end = at + from + m.index;
        return { origin: template.slice(0, end), rest: template.slice(end) };
      }
    }
    at += p.length;
  }
  return { origin: template, rest: '' };
}

/** Whether a URL template uses a secret or a connection in its scheme, user info, host or port. */
export const credentialInOrigin = (urlTemplate: string): boolean =>
  templateExpressions(splitOrigin(urlTemplate).origin).some((e) => ANY_CREDENTIAL.test(e));

/** Whether `host` (a URL's hostname) is one of `patterns` (exact, or `*.suffix` for any host under suffix). */
export function hostAllowed(host: string, patterns: string[]): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  return patterns.some((p) => (p.startsWith('*.') ? h.endsWith(p.slice(1)) && h.length > p.length - 1 : h === p));
}

/** Why the saver may not use the secret (null: they may). */
export function secretRefusal(name: string, policy: SecretUsePolicy, saver: GraphSaver): string | null {
  if (saver.admin) return null;
  if (policy.usableBy === 'editors' && saver.editor) return null;
  return policy.usableBy === 'editors'
    ? `secret "${name}" may be used only by a graph saved by a workspace admin or an editor of the pathway`
    : `secret "${name}" may be used only by a graph saved by a workspace admin`;
}

/**
 * Why the graph may not use the connection (null: it may). A workspace connection (one account an
 * admin connected for everyone) is as an `admins` secret: only a graph an admin saved gets it. A
 * user's own connection is the run's caller's token: a graph gets it only when that caller saved
 * the graph (or an admin did), so no one's graph sends another person's token where they chose.
 * `runUser`: the run's caller (absent at save time, when the saver is the caller).
 */
export function connectionRefusal(
  id: string,
  i: ConnectionUse,
  saver: GraphSaver,
  runUser?: string | null,
): string | null {
  if (saver.admin) return null;
  if (i.per === 'workspace')
    return `connection "${id}" is the workspace's shared account: only a graph saved by a workspace admin may use it`;
  if (runUser === undefined || (runUser !== null && runUser === saver.userId)) return null;
  return `connection "${id}": a person's own connection is used only by runs of graphs they saved themselves`;
}

/** Every string leaf of a JSON value (an http node body's templates). */
export function leaves(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(leaves);
  return [];
}

/** The templates of an http node's data: URL, header values and body leaves. */
export function httpTemplates(data: Record<string, unknown>): string[] {
  const headers = typeof data.headers === 'object' && data.headers !== null ? Object.values(data.headers) : [];
  return [
    ...(typeof data.url === 'string' ? [data.url] : []),
    ...headers.filter((v): v is string => typeof v === 'string'),
    ...leaves(data.body),
  ];
}

/** The data of every http node of a graph (id-based or index form). */
export function httpNodesOf(graph: unknown): { id: string; data: Record<string, unknown> }[] {
  const nodes = (graph as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return [];
  return nodes.flatMap((n: unknown, i) => {
    const node = n as { id?: unknown; type?: unknown; data?: unknown } | null;
    if (!node || node.type !== 'http' || typeof node.data !== 'object' || node.data === null) return [];
    return [{ id: typeof node.id === 'string' ? node.id : String(i), data: node.data as Record<string, unknown> }];
  });
}
