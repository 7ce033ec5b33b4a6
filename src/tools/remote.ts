import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';
import type { ToolSpec } from '../llm/types.js';
import type { Guard } from '../net/guard.js';
import { OutboundBlocked } from '../net/guard.js';
import { own } from '../kernel/own.js';

/** Longest tool result the model reads; beyond it the text is cut with a note saying how much. */
export const MAX_TOOL_RESULT_CHARS = 16_000;
/** How long one tool call may take before it counts as a transient failure. */
const TOOL_TIMEOUT_MS = 30_000;

/**
 * A plain HTTP tool described by a reflex (metadata.http_tools[]): the URL template's `{name}`
 * placeholders take arguments; the other arguments go in the query (GET, DELETE) or as a JSON body.
 */
const HttpToolDef = z
  .object({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64'),
    description: z.string().max(2000).default(''),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    url: z
      .string()
      .url()
      .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL template'),
    parameters: z
      .record(z.string(), z.unknown())
      .default({ type: 'object', properties: {} })
      .meta({ description: 'JSON schema of the arguments' }),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();
type HttpToolDef = z.infer<typeof HttpToolDef>;
export const HttpToolDefs = z.array(HttpToolDef).max(50);

/** How a tool the model was offered is run (kept in the run context under the offered name). */
export type ToolBinding = (
  | { kind: 'http'; reflexId: string; def: HttpToolDef }
  | { kind: 'mcp'; reflexId: string; serverUrl: string; tool: string }
) & {
  /** The integration whose connected-account token the call sends (reflex metadata.integration_id). */
  integrationId?: string;
};

/** A failure worth retrying (network, timeout, 429, 5xx); anything else is the model's to read. */
export class TransientToolError extends Error {}

/** Most of an HTTP tool's answer that is read at all (bytes); the rest is never downloaded. */
export const MAX_TOOL_BODY_BYTES = 256 * 1024;

/** The text the model reads: at most MAX_TOOL_RESULT_CHARS, with a note saying what was cut. `unread`: the answer went on beyond what was read. */
function capResult(text: string, unread = false): string {
  if (unread)
    return `${text.slice(0, MAX_TOOL_RESULT_CHARS)}\n[truncated: the answer was longer than ${MAX_TOOL_BODY_BYTES} bytes and only its first ${Math.min(text.length, MAX_TOOL_RESULT_CHARS)} characters are shown; ask for less]`;
  if (text.length <= MAX_TOOL_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_TOOL_RESULT_CHARS)}\n[truncated: ${text.length - MAX_TOOL_RESULT_CHARS} more characters were cut; ask for less]`;
}

/** Reads at most `max` bytes of a body and drops the connection when there is more. */
async function readCapped(res: Response, max: number): Promise<{ text: string; unread: boolean }> {
  if (!res.body) return { text: '', unread: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: Buffer.concat(chunks).toString('utf8'), unread: false };
    if (n + value.length > max) {
      chunks.push(value.subarray(0, max - n));
      await reader.cancel().catch(() => undefined); // dropping a body we stopped reading: nothing to report
      return { text: Buffer.concat(chunks).toString('utf8'), unread: true };
    }
    chunks.push(value);
    n += value.length;
  }
}

const isNetwork = (e: unknown) => {
  const code =
    (e as { code?: string; cause?: { code?: string } }).code ?? (e as { cause?: { code?: string } }).cause?.code;
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'UND_ERR_SOCKET'].includes(code ?? '') ||
    /timed? ?out|socket hang up|fetch failed/i.test(String((e as Error).message))
  );
};

/**
 * Remote tools (issue 12): HTTP tools and the tools of an MCP server (Streamable HTTP, through
 * the official SDK client), every request through the outbound guard. MCP tool lists are cached
 * per reflex version (reflex id + updatedAt).
 */
export function createRemoteTools({ guard }: { guard: Guard }) {
  const listed = new Map<string, { at: number; tools: ToolSpec[] }>();
  const LIST_TTL_MS = 5 * 60_000;

  async function withMcp<T>(serverUrl: string, fn: (c: Client) => Promise<T>, token?: string): Promise<T> {
    await guard.check(serverUrl); // a refused URL is refused before the SDK starts
    // The SDK is loaded at the first MCP call: a process whose tools never use MCP never holds it.
    const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ]);
    const client = new Client({ name: 'cortex', version: '0.1.0' });
    const transport = new StreamableHTTPClientTransport(new URL(serverUrl), {
      fetch: guard.fetch,
      ...(token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {}),
    });
    try {
      await client.connect(transport);
      return await fn(client);
    } finally {
      await client.close().catch(() => undefined); // the call's own outcome stands; a failed close has nothing to add
    }
  }

  return {
    /** The tools of an MCP server, as the model is offered them. */
    async mcpTools(reflexId: string, version: string, serverUrl: string, token?: string): Promise<ToolSpec[]> {
      // A list read with a token is kept for that token only (a server may show each account its own tools).
      const key = `${reflexId}:${version}:${serverUrl}:${token ? createHash('sha256').update(token).digest('base64url').slice(0, 22) : 'anon'}`;
      const hit = listed.get(key);
      if (hit && Date.now() - hit.at < LIST_TTL_MS) return hit.tools;
      const tools = await withMcp(
        serverUrl,
        async (c) =>
          (await c.listTools(undefined, { timeout: TOOL_TIMEOUT_MS })).tools.map((t) => ({
            name: t.name,
            description: t.description ?? '',
            parameters: (t.inputSchema ?? { type: 'object', properties: {} }) as Record<string, unknown>,
          })),
        token,
      );
      if (listed.size > 1000) listed.clear();
      listed.set(key, { at: Date.now(), tools });
      return tools;
    },

    /**
     * Runs one call. Returns the (capped) text for the model; throws TransientToolError for a
     * failure worth retrying. `idempotencyKey` goes to the server as Idempotency-Key (HTTP) or
     * `_meta.idempotency_key` (MCP), so a retried call can be recognised.
     */
    async run(b: ToolBinding, args: Record<string, unknown>, idempotencyKey: string, token?: string): Promise<string> {
      try {
        if (b.kind === 'mcp') {
          const res = await withMcp(
            b.serverUrl,
            (c) =>
              c.callTool({ name: b.tool, arguments: args, _meta: { idempotency_key: idempotencyKey } }, undefined, {
                timeout: TOOL_TIMEOUT_MS,
              }),
            token,
          );
          const content = (res.content ?? []) as { type: string; text?: string }[];
          const text = content.map((p) => (p.type === 'text' ? (p.text ?? '') : `[${p.type} content]`)).join('\n');
          return capResult(res.isError ? JSON.stringify({ error: text || 'the tool reported an error' }) : text);
        }
        const def = b.def;
        const rest = { ...args };
        const url = new URL(
          def.url.replace(/\{(\w+)\}/g, (_, k: string) => {
            const v = own(rest, k);
            delete rest[k];
            return encodeURIComponent(v === undefined ? '' : String(v));
          }),
        );
        const hasBody = def.method !== 'GET' && def.method !== 'DELETE';
        if (!hasBody)
          for (const [k, v] of Object.entries(rest))
            url.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
        const res = await guard.fetch(url, {
          method: def.method,
          redirect: 'follow',
          headers: {
            ...(def.headers ?? {}),
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            accept: 'application/json, text/plain;q=0.9, */*;q=0.5',
            'idempotency-key': idempotencyKey,
            ...(hasBody ? { 'content-type': 'application/json' } : {}),
          },
          ...(hasBody ? { body: JSON.stringify(rest) } : {}),
          signal: AbortSignal.timeout(TOOL_TIMEOUT_MS),
        });
        const { text, unread } = await readCapped(res, MAX_TOOL_BODY_BYTES);
        if (res.status === 429 || res.status >= 500)
          throw new TransientToolError(`${def.name}: the server answered ${res.status}`);
        if (res.status >= 400)
          return capResult(JSON.stringify({ error: `the server answered ${res.status}`, body: text.slice(0, 2000) }));
        return capResult(text, unread);
      } catch (e) {
        if (e instanceof TransientToolError || e instanceof OutboundBlocked) throw e;
        if (isNetwork(e) || (e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError')
          throw new TransientToolError(`${b.kind === 'http' ? b.def.name : b.tool}: ${(e as Error).message}`);
        throw e;
      }
    },
  };
}
export type RemoteTools = ReturnType<typeof createRemoteTools>;
