import { readFile } from 'node:fs/promises';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import { pino, type Logger } from 'pino';
import { type z, ZodError } from 'zod';
import { createAgentClient, redact } from './agent.js';
import type { SnakeConfig } from './config.js';
import { internalError, notFound, SnakeError, validationError } from './errors.js';
import { FruitBody, Health, ResetBody, TickBody, TickResult, formatIssue } from './schemas.js';
import { createSnakeService, type SnakeService } from './service.js';
import { SnakeState } from './state.js';

/** Everything the app needs; `fetch` and `logger` are injectable so tests can watch or replace them. */
export interface SnakeAppOptions {
  config: SnakeConfig;
  fetch?: typeof fetch;
  logger?: Logger;
}

/** Server-side logs: JSON to stdout, never to the browser, with auth headers and the key redacted anyway. */
export function createSnakeLogger(level: string, destination?: pino.DestinationStream): Logger {
  const opts = {
    level,
    base: { service: 'snake' },
    redact: { paths: ['authorization', 'headers.authorization', 'apiKey'], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(opts, destination) : pino(opts);
}

/** A route declares its schemas; the helper validates the body and checks the response against `response`. */
interface Route<B extends z.ZodType> {
  method: 'get' | 'post';
  path: string;
  body?: B;
  response: z.ZodType;
  /** A method signature (checked bivariantly), so routes with different bodies fit one array. */
  handler(input: { body: z.output<B> }): unknown;
}
const route = <B extends z.ZodType = z.ZodUnknown>(r: Route<B>) => r;

/** The four endpoints; each handler is one call into the service. */
function routes(svc: SnakeService): Route<z.ZodType>[] {
  return [
    route({ method: 'get', path: '/api/health', response: Health, handler: () => svc.health() }),
    route({
      method: 'post',
      path: '/api/reset',
      body: ResetBody,
      response: SnakeState,
      handler: ({ body }) => svc.reset(body),
    }),
    route({
      method: 'post',
      path: '/api/fruit',
      body: FruitBody,
      response: SnakeState,
      handler: ({ body }) => svc.toggleFruit(body),
    }),
    route({
      method: 'post',
      path: '/api/tick',
      body: TickBody,
      response: TickResult,
      handler: ({ body }) => svc.tick(body),
    }),
  ];
}

/** The page's files; an explicit list, so nothing else under snake/ can be fetched. */
const PUBLIC = new URL('./public/', import.meta.url);
const STATIC: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
  '/favicon.ico': { file: 'favicon.svg', type: 'image/svg+xml' },
};

/** Same-origin only: the page loads nothing from elsewhere and cannot be framed. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * The snake service as a Koa app (not listening), so server.ts and tests can bind it where they like,
 * tests on port 0.
 */
export function createSnakeApp(opts: SnakeAppOptions): Koa {
  const { config } = opts;
  const logger = opts.logger ?? createSnakeLogger(config.logLevel);
  const agent = createAgentClient({ fetch: opts.fetch ?? globalThis.fetch, config });
  const svc = createSnakeService({ agent, logger });

  const router = new Router();
  for (const r of routes(svc)) {
    router[r.method](r.path, async (ctx) => {
      const body: unknown = r.body ? r.body.parse(ctx.request.body ?? {}) : undefined;
      const out = r.response.safeParse(await r.handler({ body }));
      if (!out.success) {
        logger.error({ path: r.path, issue: formatIssue(out.error.issues[0]) }, 'snake response failed its schema');
        throw internalError();
      }
      ctx.body = out.data;
    });
  }
  for (const [path, { file, type }] of Object.entries(STATIC)) {
    router.get(path, async (ctx) => {
      ctx.type = type;
      ctx.body = await readFile(new URL(file, PUBLIC));
    });
  }

  const app = new Koa();
  app.use(securityHeaders);
  app.use(errors(logger, config.apiKey));
  app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '200kb' }));
  app.use(router.routes());
  app.use(
    router.allowedMethods({
      throw: true,
      methodNotAllowed: () => new SnakeError('METHOD_NOT_ALLOWED', 405, 'method not allowed'),
    }),
  );
  return app;
}

const securityHeaders: Middleware = async (ctx, next) => {
  ctx.set(SECURITY_HEADERS);
  await next();
};

/** The one place errors become HTTP: known ones keep their message, anything else is a bare 500. */
function errors(logger: Logger, apiKey: string | undefined): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null)
        throw notFound(ctx.path.startsWith('/api/') ? `route ${ctx.method} ${ctx.path}` : 'page');
    } catch (err) {
      const e = toSnakeError(err);
      if (e.status >= 500)
        logger.error(
          { err: redact(String((err as Error)?.stack ?? err), apiKey), path: ctx.path },
          'snake request failed',
        );
      ctx.status = e.status;
      ctx.body = { message: redact(e.message, apiKey), code: e.code };
    }
  };
}

function toSnakeError(err: unknown): SnakeError {
  if (err instanceof SnakeError) return err;
  if (err instanceof ZodError) return validationError(formatIssue(err.issues[0]));
  const http = err as { status?: unknown; type?: unknown };
  if (err instanceof SyntaxError && http.status === 400) return validationError('the request body is not valid JSON');
  if (http.status === 413) return new SnakeError('PAYLOAD_TOO_LARGE', 413, 'the request body is too large');
  if (typeof http.status === 'number' && http.status >= 400 && http.status < 500)
    return validationError('the request body could not be read');
  return internalError();
}
