import { AppError } from '../kernel/errors.js';
import { JSON_MAX_DEPTH, nestsDeeperThan } from '../kernel/json-depth.js';
import { HttpNodeData } from './graph.js';
import {
  connectionRefusal,
  credentialInOrigin,
  hostAllowed,
  leaves,
  referencedNames,
  secretRefusal,
  splitOrigin,
  type GraphSaver,
} from '../expressions/index.js';
import { OutboundBlocked, type Guard } from '../net/guard.js';
import type { RunScope } from '../temporal/definitions.js';
import { renderTemplate, renderTree } from './runs.js';
import type { ConnectionService } from '../connections/index.js';
import type { SecretService } from '../secrets/index.js';
import { setOwn } from '../kernel/own.js';

/**
 * The pathway `http` node's request (docs/pathways.md, "http"), run by an activity. Templates are
 * rendered here, over the run's data plus the workspace secrets and connection tokens they name:
 * those values exist only inside this call. They never come back in the node's value or in a
 * failure's message (both are redacted), so they never reach the workflow's history, the job's
 * stream or its stored result. Every request goes through the outbound guard.
 */

/** The longest answer body an http node reads: its value is kept in the run's history and result. */
export const HTTP_NODE_MAX_RESPONSE_BYTES = 256 * 1024;
/** How much of an unexpected answer's body a failure quotes. */
const EXCERPT_CHARS = 200;
/** What a secret or token is replaced with wherever it would leave the call. */
const REDACTED = '[redacted]';

/** One visit of an http node, as the workflow asks for it (templates, never rendered values). */
export interface HttpNodeCall {
  scope: RunScope;
  jobId: string;
  /** The node's id (the designer's; an index graph's: its position). */
  nodeId: string;
  /** Which visit of the node this is (1 for the first): the Idempotency-Key names it. */
  visit: number;
  /** The node's data as the graph holds it (validated at compile; parsed again here for defaults). */
  data: Record<string, unknown>;
  /** The run's data the templates see: input, last, nodes, loops. */
  context: Record<string, unknown>;
}

/** The node's value. */
export interface HttpNodeResult {
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON when the answer is JSON, else its text (null for HEAD and empty JSON answers). */
  body: unknown;
}

/**
 * Why a request failed, with whether another attempt may succeed (the activity maps it to a
 * retryable or a non-retryable failure). Its message is already redacted.
 */
export class HttpNodeFailure extends Error {
  constructor(
    message: string,
    readonly type:
      | 'HTTP_STATUS'
      | 'HTTP_REFUSED'
      | 'HTTP_NETWORK'
      | 'HTTP_TIMEOUT'
      | 'HTTP_TEMPLATE'
      | 'HTTP_SECRET'
      | 'HTTP_ANSWER',
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'HttpNodeFailure';
  }
}

export { referencedNames };

/** The forms a value takes in what the platform itself writes: as is, URL-encoded (both ways), JSON-escaped. */
const writtenForms = (v: string): string[] => [
  v,
  encodeURIComponent(v),
  encodeURI(v),
  new URLSearchParams({ v }).toString().slice(2),
  JSON.stringify(v).slice(1, -1),
  JSON.stringify(JSON.stringify(v)).slice(2, -2),
];

/**
 * Replaces every occurrence of the given values with REDACTED: as written, URL-encoded, form-encoded
 * and JSON-escaped (once or twice, as an error message quoting a JSON body has it), and any of
 * these in any letter case (a URL's host is lowercased, error texts quote it): defence in depth
 * behind the rules of src/expressions/credentials.ts, which keep secrets out of hosts in the first place.
 */
export function redactor(values: string[]): (s: string) => string {
  const forms = [
    ...new Set(
      values
        .filter((v) => v.length > 0)
        .flatMap(writtenForms)
        .filter((v) => v.length > 0),
    ),
  ].sort((a, b) => b.length - a.length);
  if (!forms.length) return (s) => s;
  const escape = (f: string) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const any = new RegExp(forms.map(escape).join('|'), 'gi');
  return (s) => s.replace(any, REDACTED);
}

/** `value` with `fn` applied to every string in it (keys included). */
function mapStrings(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [fn(k), mapStrings(v, fn)]));
  return value;
}

const isJson = (contentType: string) => /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType.trim());
/** Statuses worth another attempt: the server may answer differently later. */
const retryableStatus = (s: number) => s === 408 || s === 425 || s === 429 || s >= 500;

/**
 * The node's URL: its origin (scheme, user info, host, port) rendered over the run's data alone,
 * never over secrets or connections, and the rest over everything. The rendered origin must be the
 * URL's whole origin (a path part cannot make a host of its own).
 */
async function renderUrl(
  template: string,
  plain: Record<string, unknown>,
  full: Record<string, unknown>,
): Promise<string> {
  const { origin, rest } = splitOrigin(template);
  const head = await renderTemplate(origin, { ...plain, secrets: {}, connections: {} });
  const url = head + (rest ? await renderTemplate(rest, full) : '');
  const parse = (u: string) => {
    try {
      return new URL(u);
    } catch {
      return null;
    }
  };
  const a = parse(url);
  const b = parse(rest ? `${head}/` : url);
  if (
    !a ||
    !b ||
    a.protocol !== b.protocol ||
    a.host !== b.host ||
    a.username !== b.username ||
    a.password !== b.password
  )
    throw new HttpNodeFailure(
      "invalid url: the scheme and host must come before the URL's first /, ? or # (secrets never reach them)",
      'HTTP_TEMPLATE',
      false,
    );
  return url;
}

/** What a node's credentials are: the plain values, and the hosts each secret may be sent to. */
interface Credentials {
  secrets: Map<string, string>;
  connections: Map<string, string>;
  /** Per secret with allowed_hosts: the hosts it may go to. */
  hosts: Map<string, string[]>;
}

/** What the http node's request needs: the outbound guard, the credentials' services, and the graph's saver. */
interface PathwayHttpContext {
  guard: Guard;
  secrets: SecretService;
  connections: ConnectionService;
  /** Who saved the graph a run's job runs (the version pinned at start; an inline graph: the run's caller). */
  saverOf: (call: HttpNodeCall) => Promise<GraphSaver>;
}

/** A refusal to use a secret or a connection (never retried). */
const refuse = (message: string) => new HttpNodeFailure(message, 'HTTP_SECRET', false);

/**
 * The plain values of the secrets and connection tokens the templates name, each only when the
 * graph's saver may use it under its current policy (src/expressions/credentials.ts); a missing or
 * refused one fails the node before any request, with a reason that holds no value.
 */
async function credentials(
  ctx: PathwayHttpContext,
  call: HttpNodeCall,
  urlTemplate: string,
  templates: string[],
): Promise<Credentials> {
  const refs = referencedNames(templates);
  const none: Credentials = { secrets: new Map(), connections: new Map(), hosts: new Map() };
  if (!refs.secrets.length && !refs.connections.length) return none;
  if (credentialInOrigin(urlTemplate))
    throw refuse("a secret or connection may not be used in the URL's scheme, host or port");
  const workspaceId = call.scope.workspaceId;
  const saver = await ctx.saverOf(call);
  const policies = refs.secrets.length ? await ctx.secrets.policies(workspaceId, refs.secrets) : new Map();
  const missing = refs.secrets.filter((n) => !policies.has(n));
  if (missing.length)
    throw refuse(
      `secret ${missing.map((n) => `"${n}"`).join(', ')} is not set in this workspace (PUT /v1/secrets/NAME)`,
    );
  const hosts = new Map<string, string[]>();
  for (const [name, policy] of policies) {
    const why = secretRefusal(name, policy, saver);
    if (why) throw refuse(why);
    if (policy.allowedHosts?.length) hosts.set(name, policy.allowedHosts);
  }
  for (const id of refs.connections) {
    const i = await ctx.connections.integration(workspaceId, id);
    const why = i && connectionRefusal(id, i, saver, call.scope.userId);
    if (why) throw refuse(why);
  }
  const secrets = refs.secrets.length ? await ctx.secrets.reveal(workspaceId, refs.secrets) : new Map<string, string>();
  const gone = refs.secrets.filter((n) => !secrets.has(n));
  if (gone.length)
    throw refuse(`secret ${gone.map((n) => `"${n}"`).join(', ')} is not set in this workspace (PUT /v1/secrets/NAME)`);
  const connections = new Map<string, string>();
  const who = { workspaceId, userId: call.scope.userId, apiKeyId: call.scope.apiKeyId };
  for (const id of refs.connections) {
    const token = await ctx.connections.tokenFor(who, id);
    if (!token) throw refuse(`connection "${id}": the run's caller has no connection to this integration`);
    connections.set(id, token);
  }
  return { secrets, connections, hosts };
}

async function request(ctx: PathwayHttpContext, call: HttpNodeCall): Promise<HttpNodeResult> {
  const parsed = HttpNodeData.safeParse(call.data);
  if (!parsed.success)
    throw new HttpNodeFailure(`invalid http node data: ${parsed.error.issues[0]?.message}`, 'HTTP_TEMPLATE', false);
  const data = parsed.data;
  const headerTemplates = Object.entries(data.headers ?? {});
  const templates = [data.url, ...headerTemplates.map(([, v]) => v), ...leaves(data.body)];
  const creds = await credentials(ctx, call, data.url, templates);
  const redact = redactor([...creds.secrets.values(), ...creds.connections.values()]);
  try {
    return await send(ctx, call, data, headerTemplates, creds, redact);
  } catch (e) {
    if (e instanceof HttpNodeFailure) throw new HttpNodeFailure(redact(e.message), e.type, e.retryable);
    // A template that does not evaluate; a refused address (the guard's reason); anything else.
    const message = redact((e as { message?: string }).message ?? String(e));
    if (e instanceof OutboundBlocked) throw new HttpNodeFailure(message, 'HTTP_REFUSED', false);
    if (e instanceof AppError && e.status < 500) throw new HttpNodeFailure(message, 'HTTP_TEMPLATE', false);
    // A rendered header that is not a valid header (a line break in its value): another attempt sends the same.
    const code = (e as { code?: string }).code;
    if (code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_HTTP_TOKEN')
      throw new HttpNodeFailure(`invalid request: ${message}`, 'HTTP_TEMPLATE', false);
    throw new HttpNodeFailure(`request failed: ${message}`, 'HTTP_NETWORK', true);
  }
}

async function send(
  ctx: PathwayHttpContext,
  call: HttpNodeCall,
  data: HttpNodeData,
  headerTemplates: [string, string][],
  creds: Credentials,
  redact: (s: string) => string,
): Promise<HttpNodeResult> {
  const context = {
    ...call.context,
    secrets: Object.fromEntries(creds.secrets),
    connections: Object.fromEntries(creds.connections),
  };
  const carries = creds.secrets.size + creds.connections.size > 0;
  // Without a secret or token there is nothing to keep out of the host: the URL renders as a whole.
  const url = carries ? await renderUrl(data.url, call.context, context) : await renderTemplate(data.url, context);
  if (carries) {
    const host = new URL(url).hostname;
    for (const [name, allowed] of creds.hosts)
      if (!hostAllowed(host, allowed))
        throw refuse(`secret "${name}" may not be sent to ${host}: its allowed_hosts are ${allowed.join(', ')}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, template] of headerTemplates)
    setOwn(headers, name.toLowerCase(), await renderTemplate(template, context));
  // Stable across the activity's retries: the receiver can tell a retried call from a new one.
  headers['idempotency-key'] ??= `${call.jobId}:${call.nodeId}:${call.visit}`;
  let body: string | undefined;
  if (typeof data.body === 'string') {
    body = await renderTemplate(data.body, context);
    headers['content-type'] ??= 'text/plain; charset=utf-8';
  } else if (data.body !== undefined) {
    body = JSON.stringify(await renderTree(data.body, context));
    headers['content-type'] ??= 'application/json';
  }
  const res = await ctx.guard
    .fetch(url, {
      method: data.method,
      headers,
      body,
      signal: AbortSignal.timeout(data.timeout_ms),
      // A request that carries a secret or a token goes to the host it was checked for, not where a redirect says.
      ...(carries ? { redirect: 'error' as const } : {}),
    })
    .catch((e: unknown) => {
      if ((e as { name?: string }).name === 'TimeoutError' || (e as { name?: string }).name === 'AbortError')
        throw new HttpNodeFailure(`no answer within ${data.timeout_ms} ms`, 'HTTP_TIMEOUT', true);
      throw e;
    });
  const text = data.method === 'HEAD' ? '' : await res.text();
  const contentType = res.headers.get('content-type') ?? '';
  const expected = data.expect ? data.expect.includes(res.status) : res.status >= 200 && res.status < 300;
  if (!expected) {
    const where = (() => {
      const u = new URL(url);
      return `${u.origin}${u.pathname}`;
    })();
    const excerpt = text.replace(/\s+/g, ' ').trim().slice(0, EXCERPT_CHARS);
    throw new HttpNodeFailure(
      `${data.method} ${where} answered ${res.status}, expected ${data.expect ? data.expect.join(' or ') : '2xx'}` +
        (excerpt ? `: ${excerpt}${text.length > EXCERPT_CHARS ? '…' : ''}` : ''),
      'HTTP_STATUS',
      retryableStatus(res.status),
    );
  }
  let parsed: unknown = text;
  if (data.method === 'HEAD') parsed = null;
  else if (isJson(contentType)) {
    try {
      parsed = text.trim() === '' ? null : (JSON.parse(text) as unknown);
    } catch {
      parsed = text;
    }
    // An answer nested too deep fails the node (it could be neither redacted nor stored).
    if (nestsDeeperThan(parsed, JSON_MAX_DEPTH))
      throw new HttpNodeFailure(
        `the answer's JSON is nested deeper than ${JSON_MAX_DEPTH} levels`,
        'HTTP_ANSWER',
        false,
      );
  }
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => setOwn(out, k, v));
  // A server that echoes a secret does not put it in the run's history either.
  return mapStrings({ status: res.status, headers: out, body: parsed }, redact) as HttpNodeResult;
}

export function createPathwayHttpService(d: PathwayHttpContext) {
  const ctx: PathwayHttpContext = d;
  return {
    /** Renders the node's templates, sends the request through the guard, and returns its answer. */
    request: (call: HttpNodeCall): Promise<HttpNodeResult> => request(ctx, call),
  };
}
