import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { z, type ZodType } from 'zod';
import { VERSION } from '../src/config.js';
import { ErrorBody } from '../src/schemas/common.js';
import type { RouteDef } from './route.js';

/** Koa-style `/v1/x/:id` → OpenAPI `/v1/x/{id}`. */
export const toOpenApiPath = (p: string): string => p.replace(/:([A-Za-z_]+)/g, '{$1}');

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ErrorBody } } });

/**
 * The OpenAPI document, generated from the same route objects the router mounts (STYLE.md §3),
 * so a route cannot exist without its documented shapes.
 */
export function buildOpenApi(routes: RouteDef[]) {
  const paths: ZodOpenApiPathsObject = {};
  for (const r of routes) {
    const path = toOpenApiPath(r.path);
    const status = String(r.status ?? 200);
    const isSse = r.path.endsWith('/events') || r.path.endsWith('/stream');
    const op: ZodOpenApiOperationObject = {
      operationId: `${r.method}_${r.path.replace(/[^A-Za-z0-9]+/g, '_')}`,
      summary: r.summary,
      tags: r.tags,
      security: r.auth === 'none' ? [] : r.auth === 'optional' ? [{}, { bearer: [] }] : [{ bearer: [] }],
      requestParams: {
        ...(r.params ? { path: r.params as z.ZodObject } : {}),
        ...(r.query ? { query: r.query as z.ZodObject } : {}),
        ...(r.brain ? { header: z.object({ 'x-brain-id': r.brain === 'required' ? z.uuid() : z.uuid().optional() }) } : {}),
      },
      ...(r.body ? { requestBody: { content: { 'application/json': { schema: r.body as ZodType } } } } : {}),
      responses: {
        [status]: isSse
          ? { description: 'Server-sent events: `id: <cursor>` and `data: <json>` lines, `: ping` keepalives', content: { 'text/event-stream': { schema: z.string() } } }
          : { description: 'OK', ...(r.response ? { content: { 'application/json': { schema: r.response } } } : {}) },
        '400': errorResponse('VALIDATION_ERROR'),
        ...(r.auth === 'none' ? {} : { '401': errorResponse('AUTH_REQUIRED'), '403': errorResponse('FORBIDDEN') }),
        '404': errorResponse('NOT_FOUND'),
        '429': errorResponse('RATE_LIMIT'),
      },
    };
    paths[path] = { ...(paths[path] ?? {}), [r.method]: op };
  }
  return createDocument({
    openapi: '3.1.0',
    info: { title: 'Cortex platform API', version: VERSION, description: 'Durable agents and agent workflows on Temporal.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key or HS256 JWT' } } },
    paths,
  });
}
