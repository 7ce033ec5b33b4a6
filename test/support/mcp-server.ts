import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/**
 * An HTTP handler serving a stateless MCP server built with the official SDK (Streamable HTTP):
 * each request gets a fresh server with the tools `register` adds, and sees the request (its
 * Authorization header, for tools that need a connected account).
 */
export function mcpHandler(name: string, register: (server: McpServer, req: IncomingMessage) => void) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    const server = new McpServer({ name, version: '1.0.0' });
    register(server, req);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    await transport.handleRequest(
      req,
      res,
      chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined,
    );
  };
}
