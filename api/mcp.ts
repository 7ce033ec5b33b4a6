import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Context } from 'koa';
import { AppError, unavailable, workspaceShareExceeded } from '../src/kernel/errors.js';
import { shareOf } from '../src/kernel/limits.js';
import type { Redis } from '../src/kernel/redis.js';
import type { FeedReader } from '../src/kernel/streams.js';
import type { Scope } from '../src/kernel/scope.js';
import { createMcpTools, type McpToolDef, type ToolOutcome } from '../src/mcp/index.js';
import { resolveRequestScope, type RouteContext } from './route.js';

/** A session with no request and no open stream for this long is closed (its client re-initializes). */
const SESSION_IDLE_MS = 30 * 60_000;
/** tools/list_changed notifications of one workspace are coalesced over this window. */
const LIST_CHANGED_DEBOUNCE_MS = 100;
const FEED_BLOCK_MS = 5_000;

/** One MCP session: its SDK server and transport, whose credential opened it, and its activity. */
interface Session {
  id: string;
  server: Server;
  transport: StreamableHTTPServerTransport;
  workspaceId: string;
  principal: string;
  lastSeen: number;
  /** Requests of the session still being answered (a tools/call's stream, the standalone GET stream). */
  open: number;
  closed: boolean;
  /** Counted in its workspace's share of sessions. */
  counted: boolean;
}

/** What every request hands its handlers through the transport: the caller's scope and the request's origin. */
interface RequestAuth {
  scope: Scope;
  baseUrl: string;
}

const principalOf = (scope: Scope): string => scope.apiKeyId ?? `user:${scope.userId ?? ''}`;

const authOf = (extra: { authInfo?: AuthInfo }): RequestAuth => {
  const auth = extra.authInfo?.extra as RequestAuth | undefined;
  if (!auth?.scope) throw new McpError(ErrorCode.InvalidRequest, 'Unauthenticated');
  return auth;
};

const OUTPUT_SCHEMA: Tool['outputSchema'] = {
  type: 'object',
  properties: {
    job_id: { type: 'string', description: 'The job the call ran (GET /v1/jobs/:job_id)' },
    trace_id: { type: ['string', 'null'], description: 'The trace of the run' },
    result: { description: "The job's result: a neuron's reply with its usage, a pathway's output and node values" },
  },
  required: ['job_id', 'trace_id', 'result'],
};

/** A tool call's outcome as MCP's CallToolResult. */
function toResult(o: ToolOutcome): CallToolResult {
  const structured = { job_id: o.jobId, trace_id: o.traceId };
  switch (o.status) {
    case 'completed':
      return {
        content: [{ type: 'text', text: o.text }],
        structuredContent: { ...structured, result: o.result ?? null },
      };
    case 'failed':
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: `Job ${o.jobId} ${o.error === 'cancelled' ? 'was cancelled' : 'failed'}: ${o.message}`,
          },
        ],
        structuredContent: { ...structured, result: null, error: o.error, message: o.message },
      };
    case 'waiting': {
      const i = o.intervention;
      const how = i
        ? `It waits for a human answer to intervention ${i.id} ("${i.title}", options: ${i.options.join(', ') || 'none'})` +
          `${i.pageUrl ? `: approve or reject at ${i.pageUrl}` : ''}, or answer it with POST ${i.apiUrl}.`
        : 'It waits for a human answer.';
      return {
        isError: true,
        content: [
          { type: 'text', text: `Job ${o.jobId} is waiting for approval. ${how} Its result: GET /v1/jobs/${o.jobId}.` },
        ],
        structuredContent: {
          ...structured,
          result: null,
          status: 'waiting',
          intervention_id: i?.id ?? null,
          approval_url: i?.pageUrl ?? null,
          waiting_for: o.waitingFor,
        },
      };
    }
    case 'aborted':
      return {
        isError: true,
        content: [{ type: 'text', text: `Job ${o.jobId} was cancelled by the client.` }],
        structuredContent: { ...structured, result: null },
      };
  }
}

const toTool = (t: McpToolDef): Tool => ({
  name: t.name,
  title: t.title,
  description: t.description,
  inputSchema: t.inputSchema,
  outputSchema: OUTPUT_SCHEMA,
  annotations: { title: t.title, readOnlyHint: false, openWorldHint: true },
});

/**
 * The MCP endpoint (`/v1/mcp`, docs/mcp.md): Streamable HTTP in session mode with the official
 * SDK's server. Every request is authenticated as a route is (bearer API key or JWT, optional
 * X-Brain-Id) and carries its scope to the handlers; a session answers only the credential that
 * opened it. Sessions live in this process (a deployment with several API processes routes a
 * session's requests to one process, by its Mcp-Session-Id header). Tool list changes come from
 * the platform-wide resource feed, followed while this process has sessions.
 */
export function createMcpEndpoint(rc: RouteContext) {
  const { services } = rc;
  const tools = createMcpTools(services);
  const sessions = new Map<string, Session>();

  function buildServer(session: { closed: boolean }): Server {
    const server = new Server(
      { name: 'cortex', title: 'Cortex', version: '1.0.0' },
      {
        capabilities: { tools: { listChanged: true } },
        instructions:
          'Each tool runs a Cortex neuron (an AI agent) or pathway (a workflow) as a durable job and answers its result.',
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, async (_req, extra) => {
      const { scope } = authOf(extra);
      return { tools: (await tools.list(scope)).map(toTool) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
      const { scope, baseUrl } = authOf(extra);
      const tool = await tools.find(scope, req.params.name).catch((e: unknown) => {
        if (e instanceof AppError && e.status === 404)
          throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
        throw e;
      });
      const token = req.params._meta?.progressToken;
      const onProgress =
        token === undefined
          ? undefined
          : (p: { progress: number; message?: string }) =>
              extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, ...p } });
      try {
        const outcome = await tools.call(scope, tool, req.params.arguments ?? {}, {
          signal: extra.signal,
          onProgress,
          baseUrl,
          // A session that closes aborts its calls as well: their jobs go on (a client's cancel stops them).
          isCancel: () => !session.closed,
        });
        return toResult(outcome);
      } catch (e) {
        // A refusal of the platform (bad arguments, an inactive neuron, a budget) is the tool's error.
        if (e instanceof AppError && e.status < 500)
          return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.message}` }] };
        throw e;
      }
    });
    return server;
  }

  function uncount(s: Session): void {
    if (!s.counted) return;
    s.counted = false;
    const n = (perWorkspace.get(s.workspaceId) ?? 1) - 1;
    if (n > 0) perWorkspace.set(s.workspaceId, n);
    else perWorkspace.delete(s.workspaceId);
  }

  function close(s: Session): void {
    if (s.closed) return;
    s.closed = true;
    sessions.delete(s.id);
    uncount(s);
    void s.server.close().catch(() => undefined);
  }

  // Idle sessions are closed (a session whose client left without DELETE would otherwise stay).
  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const s of sessions.values()) if (s.open === 0 && now - s.lastSeen > SESSION_IDLE_MS) close(s);
  }, 60_000);
  sweeper.unref();

  const listChanged = createListChangedFollower(
    services.streams,
    services.redis,
    () => sessions.size > 0,
    (ws) => {
      for (const s of sessions.values()) {
        if (s.workspaceId === ws) void s.server.sendToolListChanged().catch(() => undefined);
      }
    },
  );

  // Sessions this process keeps at most (503 past it), and a workspace's share of them (429 past it).
  const maxSessions = services.config.MCP_MAX_SESSIONS;
  const workspaceMax = shareOf(maxSessions, services.config.MCP_WORKSPACE_SHARE_PERCENT);
  const perWorkspace = new Map<string, number>();

  async function open(scope: Scope): Promise<Session> {
    if (sessions.size >= maxSessions) throw unavailable('Too many MCP sessions on this server; retry later', 5);
    if ((perWorkspace.get(scope.workspaceId) ?? 0) >= workspaceMax)
      throw workspaceShareExceeded(
        `This workspace holds ${workspaceMax} MCP sessions on this server, its share; close one (DELETE /v1/mcp) or retry later`,
        5,
      );
    // Counted from here (concurrent initializes cannot pass the share together) until closed, or
    // until its first request turns out not to have opened it.
    perWorkspace.set(scope.workspaceId, (perWorkspace.get(scope.workspaceId) ?? 0) + 1);
    const s = {
      counted: true,
      workspaceId: scope.workspaceId,
      principal: principalOf(scope),
      lastSeen: Date.now(),
      open: 0,
    } as Session;
    s.closed = false;
    s.id = '';
    s.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        s.id = id;
        sessions.set(id, s);
        listChanged.ensure();
      },
      onsessionclosed: () => close(s),
    });
    s.transport.onclose = () => close(s);
    s.server = buildServer(s);
    await s.server.connect(s.transport);
    return s;
  }

  const jsonRpcError = (ctx: Context, status: number, code: number, message: string) => {
    ctx.status = status;
    ctx.body = { jsonrpc: '2.0', error: { code, message }, id: null };
  };

  return async (ctx: Context): Promise<void> => {
    const scope = await resolveRequestScope(ctx, rc);
    const sessionId = ctx.get('mcp-session-id') || undefined;
    let session: Session;
    let fresh = false;
    if (sessionId) {
      const found = sessions.get(sessionId);
      // Another credential's session reads as unknown: the client starts a session of its own.
      if (!found || found.workspaceId !== scope.workspaceId || found.principal !== principalOf(scope))
        return jsonRpcError(ctx, 404, -32001, 'Session not found');
      session = found;
    } else {
      if (ctx.method !== 'POST')
        return jsonRpcError(ctx, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      session = await open(scope);
      fresh = true;
    }
    session.lastSeen = Date.now();
    session.open++;
    ctx.res.once('close', () => {
      session.open--;
      session.lastSeen = Date.now();
    });
    const base = rc.services.config.PUBLIC_BASE_URL || `${ctx.protocol}://${ctx.host}`;
    const req = ctx.req as IncomingMessage & { auth?: AuthInfo };
    req.auth = { token: principalOf(scope), clientId: principalOf(scope), scopes: [], extra: { scope, baseUrl: base } };
    // A tool call waits for its job and the GET stream stays open: neither has a socket timeout.
    ctx.req.socket.setTimeout(0);
    ctx.respond = false;
    try {
      await session.transport.handleRequest(req, ctx.res, ctx.method === 'POST' ? ctx.request.body : undefined);
    } finally {
      // A first request that was not an initialize opened nothing: its place in the share is given back.
      if (fresh && !session.id) {
        uncount(session);
        void session.server.close().catch(() => undefined);
      }
    }
  };
}

/**
 * Follows the platform-wide resource feed (every partition, src/kernel/feed.ts) on a reader of its own
 * while `active()` holds, and calls `changed(workspaceId)` (coalesced per workspace) when a neuron
 * or pathway is created, updated or deleted. Started by `ensure()`; it stops by itself once `active()` is false.
 */
function createListChangedFollower(
  streams: RouteContext['services']['streams'],
  redis: Redis,
  active: () => boolean,
  changed: (workspaceId: string) => void,
) {
  let running = false;
  const pending = new Map<string, NodeJS.Timeout>();
  const signal = (ws: string) => {
    if (pending.has(ws)) return;
    pending.set(
      ws,
      setTimeout(() => {
        pending.delete(ws);
        changed(ws);
      }, LIST_CHANGED_DEBOUNCE_MS),
    );
  };
  async function run(): Promise<void> {
    let reader: FeedReader | undefined;
    try {
      let last = (await streams.feed.positions()).map((p) => p.id);
      while (active() && redis.status !== 'end') {
        reader ??= streams.feed.reader();
        const read = await reader.read(last, FEED_BLOCK_MS, 500).catch(() => {
          reader?.close();
          reader = undefined;
          return null;
        });
        if (read === null) await new Promise((r) => setTimeout(r, 1_000));
        for (const { partition, entries } of read ?? []) {
          for (const e of entries) {
            const kind = (e.data.resource as { kind?: unknown } | undefined)?.kind;
            if ((kind === 'neuron' || kind === 'pathway') && typeof e.data.workspace_id === 'string')
              signal(e.data.workspace_id);
          }
          last = last.map((id, p) => (p === partition ? entries[entries.length - 1].id : id));
        }
      }
    } finally {
      reader?.close();
      running = false;
    }
  }
  return {
    ensure(): void {
      if (running) return;
      running = true;
      void run().catch(() => undefined);
    },
  };
}
