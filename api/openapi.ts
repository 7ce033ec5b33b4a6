import { PathwayGraphFormat } from '../src/pathways/index.js';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { z, type ZodType } from 'zod';
import { VERSION } from '../src/kernel/config.js';
import { ERROR_CODES } from '../src/kernel/errors.js';
import { ErrorBody } from '../src/kernel/schemas.js';
import { OpenAIErrorBody } from '../src/runs/index.js';
import { OPENAI_ERRORS, OPENAI_PREFIX } from './openai/errors.js';
import { operationIdOf, type RouteDef } from './route.js';

/** Koa-style `/v1/x/:id` → OpenAPI `/v1/x/{id}`. */
export const toOpenApiPath = (p: string): string => p.replace(/:([A-Za-z_]+)/g, '{$1}');

/** Routes that answer with server-sent events rather than JSON. */
const isSseRoute = (r: Pick<RouteDef, 'path' | 'method'>): boolean =>
  r.method === 'get' && (r.path.endsWith('/events') || r.path.endsWith('/stream'));

const platformError = (code: keyof typeof ERROR_CODES) => ({
  description: `${code}: ${ERROR_CODES[code].meaning}`,
  content: { 'application/json': { schema: ErrorBody, example: { message: exampleMessage[code], code } } },
});
/** The same error in OpenAI's shape, as the OpenAI-compatible routes answer it. */
const openAIError = (code: keyof typeof ERROR_CODES) => ({
  description: `${ERROR_CODES[code].meaning} (OpenAI's error shape)`,
  content: {
    'application/json': {
      schema: OpenAIErrorBody,
      example: { error: { message: exampleMessage[code], ...OPENAI_ERRORS[code], param: null } },
    },
  },
});
const exampleMessage: Partial<Record<keyof typeof ERROR_CODES, string>> = {
  VALIDATION_ERROR: 'message: expected string, received number',
  AUTH_REQUIRED: 'Authentication required',
  FORBIDDEN: 'Requires role workspace_admin',
  NOT_FOUND: 'Neuron not found',
  RATE_LIMIT: 'Rate limit exceeded',
  CONFLICT: 'Already exists',
  PAYLOAD_TOO_LARGE: 'Request body too large',
  UNSUPPORTED_MEDIA_TYPE: 'Unsupported content type; send application/json',
  SERVICE_UNAVAILABLE: 'The API is at capacity; retry shortly',
  IDEMPOTENCY_KEY_REUSED: 'This Idempotency-Key was used with a different request; use a new key for a new request',
};

/** A job stream as it appears on the wire (docs/streams.md): a retried turn resets, one terminal entry ends it. */
const JOB_STREAM_EXAMPLE = [
  'id: 1731000000000-0',
  'data: {"type":"status","status":"running"}',
  '',
  'id: 1731000000050-0',
  'data: {"type":"token","turn":0,"attempt":1,"index":0,"text":"Hel"}',
  '',
  'id: 1731000000090-0',
  'data: {"type":"reset","turn":0,"attempt":2}',
  '',
  'id: 1731000000120-0',
  'data: {"type":"token","turn":0,"attempt":2,"index":0,"text":"Hello"}',
  '',
  ': ping',
  '',
  'id: 1731000000300-0',
  'data: {"type":"complete","result":{"text":"Hello"}}',
  '',
  '',
].join('\n');

const IdempotencyKeyHeader = z
  .string()
  .min(1)
  .max(255)
  .optional()
  .meta({
    description:
      'Makes a retry safe: the first response is kept for 24 h and returned for a repeat of the same request (header ' +
      '`Idempotent-Replayed: true`); the same key with another body is a 422; while the first is still running, a 409. ' +
      'Scoped to the workspace and the route. A request answered 503 kept nothing for the key: retry it with the same key.',
  });

const SSE_DESCRIPTION =
  'Server-sent events: `id: <cursor>` then `data: <json>` per entry, `: ping` keepalives. Resume with `after=<cursor>` or the `Last-Event-ID` header. ' +
  'On a job stream, a `reset` entry means: drop every token of that turn shown so far; the stream ends after its one terminal entry (`complete` or `error`). Entry types: docs/streams.md.';

const ERROR_TABLE = [
  '| status | code | meaning |',
  '|---|---|---|',
  ...Object.entries(ERROR_CODES).map(([code, e]) => `| ${e.status} | \`${code}\` | ${e.meaning} |`),
].join('\n');

const DESCRIPTION = `Durable agents (neurons) and agent workflows (pathways) on Temporal.

Authenticate with \`Authorization: Bearer <API key or JWT>\`. Routes marked with an \`x-brain-id\` header act in that brain.

**Main flows**: invoke a neuron (\`neurons.invoke\`) → poll \`jobs.status\` or stream \`jobs.stream\`; run a pathway
(\`pathways.execute\`) → a human node makes the job \`waiting\` → answer with \`interventions.respond\`.
A typed TypeScript client, with stream resume and the reset rule built in, is in \`clients/typescript\`.

**Errors**: every error body is \`{ "message", "code" }\`, except under \`/v1/openai\` (the OpenAI-compatible
endpoint), whose errors are OpenAI's \`{ "error": { "message", "type", "param", "code" } }\`:

${ERROR_TABLE}`;

/**
 * The OpenAPI document, generated from the same route objects the router mounts,
 * so a route cannot exist without its documented shapes. Operation ids are derived in
 * api/route.ts; two routes with one id are refused here, so the id set stays unique.
 */
export function buildOpenApi(routes: RouteDef[], opts: { servers?: OpenApiServer[] } = {}) {
  const paths: ZodOpenApiPathsObject = {};
  const ids = new Map<string, string>();
  for (const r of routes) {
    const operationId = operationIdOf(r);
    const where = `${r.method.toUpperCase()} ${r.path}`;
    if (ids.has(operationId))
      throw new Error(
        `operation id ${operationId} of ${where} is also derived for ${ids.get(operationId)}: give one of them an explicit operationId`,
      );
    ids.set(operationId, where);
    const path = toOpenApiPath(r.path);
    const status = String(r.status ?? 200);
    const hasBody = Boolean(r.body);
    // Every POST but a stream's takes an Idempotency-Key (api/middleware/idempotency.ts).
    const idempotent = r.method === 'post' && !r.kind;
    const errorResponse = r.path.startsWith(`${OPENAI_PREFIX}/`) ? openAIError : platformError;
    const op: ZodOpenApiOperationObject = {
      operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: r.tags,
      security: r.auth === 'none' ? [] : r.auth === 'optional' ? [{}, { bearer: [] }] : [{ bearer: [] }],
      requestParams: {
        ...(r.params ? { path: r.params as z.ZodObject } : {}),
        ...(r.query ? { query: r.query as z.ZodObject } : {}),
        ...(r.brain || idempotent
          ? {
              header: z.object({
                ...(r.brain ? { 'x-brain-id': r.brain === 'required' ? z.uuid() : z.uuid().optional() } : {}),
                ...(idempotent ? { 'idempotency-key': IdempotencyKeyHeader } : {}),
              }),
            }
          : {}),
      },
      ...(hasBody
        ? {
            requestBody: {
              content: {
                'application/json': {
                  schema: r.body as ZodType,
                  ...(r.examples?.request !== undefined ? { example: r.examples.request } : {}),
                },
              },
            },
          }
        : {}),
      responses: {
        [status]: isSseRoute(r)
          ? {
              description: SSE_DESCRIPTION,
              content: {
                'text/event-stream': {
                  schema: z.string(),
                  ...(r.path.endsWith('/stream') ? { example: JOB_STREAM_EXAMPLE } : {}),
                },
              },
            }
          : {
              description: 'OK',
              ...(r.response
                ? {
                    content: {
                      'application/json': {
                        schema: r.response,
                        ...(r.examples?.response !== undefined ? { example: r.examples.response } : {}),
                      },
                    },
                  }
                : {}),
            },
        '400': errorResponse('VALIDATION_ERROR'),
        ...(r.auth === 'none' ? {} : { '401': errorResponse('AUTH_REQUIRED'), '403': errorResponse('FORBIDDEN') }),
        '404': errorResponse('NOT_FOUND'),
        ...(hasBody
          ? { '413': errorResponse('PAYLOAD_TOO_LARGE'), '415': errorResponse('UNSUPPORTED_MEDIA_TYPE') }
          : {}),
        ...(idempotent ? { '409': errorResponse('CONFLICT'), '422': errorResponse('IDEMPOTENCY_KEY_REUSED') } : {}),
        '429': errorResponse('RATE_LIMIT'),
        '503': errorResponse('SERVICE_UNAVAILABLE'),
      },
    };
    paths[path] = { ...(paths[path] ?? {}), [r.method]: op };
  }
  const doc = createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Cortex platform API',
      version: VERSION,
      description: DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: opts.servers ?? [{ url: '/', description: 'the address this document was fetched from' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key or HS256 JWT' } },
      // The pathway graph format (one schema per node type), referenced by every pathway_graph field.
      schemas: { PathwayGraph: PathwayGraphFormat },
    },
    paths,
  });
  dropUnreferencedSchemas(doc);
  return doc;
}

/**
 * The document as served at /v1/openapi.json, from its JSON text built without `servers` (kept
 * once per process): `servers` names the address the client reached, so "try it" and generated
 * clients call the API where the document came from.
 */
export function withServers(jsonWithoutServers: string, servers: OpenApiServer[]): string {
  return `{"servers":${JSON.stringify(servers)},${jsonWithoutServers.slice(1)}`;
}

/** A server entry of the document (OpenAPI `servers`). */
export type OpenApiServer = { url: string; description?: string };

/**
 * Removes component schemas nothing in the document references. zod-openapi renders a schema
 * with an id in both its input and output form once it meets the id in both directions; the
 * pathway graph format is published as input only, so the output twins of its node schemas would
 * be listed with no reference to them (redocly's no-unused-components).
 */
function dropUnreferencedSchemas(doc: { components?: { schemas?: Record<string, unknown> } }): void {
  const schemas = doc.components?.schemas;
  if (!schemas) return;
  for (;;) {
    const text = JSON.stringify(doc);
    const unused = Object.keys(schemas).filter((id) => !text.includes(`"#/components/schemas/${id}"`));
    if (unused.length === 0) return;
    for (const id of unused) delete schemas[id];
  }
}
