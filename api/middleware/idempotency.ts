import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from '../../src/kernel/redis.js';
import type { Context } from 'koa';
import { AppError, validationError } from '../../src/kernel/errors.js';
import { bestEffort } from '../../src/kernel/best-effort.js';
import type { Logger } from '../../src/kernel/logger.js';
import { callerOf, type Scope } from '../../src/kernel/scope.js';

/** What a key's record holds: in progress (with the owner's token), or the first response. */
type Record_ =
  | { state: 'running'; fp: string; token: string }
  | { state: 'done'; fp: string; status: number; body: unknown; type?: string };

/** JSON with object keys sorted, so the same body always gives the same fingerprint. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

// Claims the key for a request, or answers what it holds: one round trip, atomic.
const CLAIM = `local v = redis.call('GET', KEYS[1]) if v then return v end redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return false`;
// Gives a running claim back (only the owner's), so a retry runs the request again.
const GIVE_BACK = `local v = redis.call('GET', KEYS[1]) if v and string.find(v, ARGV[1], 1, true) then redis.call('DEL', KEYS[1]) end return 1`;

/**
 * Idempotency-Key for creating POSTs (docs/operations.md): the key, scoped to the caller's
 * workspace, the caller itself (src/kernel/scope.ts callerOf: a member who sends an admin's key gets an
 * outcome of their own, never the admin's) and the route, is claimed before the handler runs and
 * holds the first response for IDEMPOTENCY_TTL_S. A repeat of the same request returns that
 * response (`Idempotent-Replayed: true`); the same key with another body is a 422; a repeat while
 * the first is still running is a 409. An outcome that is not final (a 5xx, a 503 of an abandoned
 * request) is not kept: the claim is given back and a retry runs again, with the same derived ids
 * (src/kernel/request-context.ts `newId`), so what the first attempt may have stored is found instead of
 * written twice.
 */
export function createIdempotency(redis: Redis, o: { prefix: string; ttlS: number }) {
  return {
    /**
     * Runs `respond` (which sets ctx.status and ctx.body) under the request's key, or replays the
     * first response. The key is the caller's own: its workspace and credential (from `scope`) and
     * `route` (method and path template); `respond` receives the key's derivation seed.
     */
    async run(
      ctx: Context,
      scope: Scope,
      route: string,
      request: unknown,
      respond: (seed: string | undefined) => Promise<void>,
    ): Promise<void> {
      const header = ctx.get('idempotency-key');
      if (!header) return respond(undefined);
      const log = ctx.state.log as Logger | undefined;
      if (header.length > 255 || !/^[\x21-\x7e]+$/.test(header))
        throw validationError('Idempotency-Key: 1 to 255 visible ASCII characters');
      const tenant = scope.workspaceId || `ip:${ctx.ip}`;
      const seed = createHash('sha256')
        .update(`${tenant}\n${callerOf(scope) ?? `ip:${ctx.ip}`}\n${route}\n${header}`)
        .digest('base64url');
      // The key names its tenant (the workspace, or the address): deleting a workspace finds its keys.
      const key = `${o.prefix}idem:${tenant}:${seed}`;
      const fp = createHash('sha256').update(canonical(request)).digest('base64url');
      const token = randomUUID();
      const running: Record_ = { state: 'running', fp, token };
      // While it runs the claim lives as long as a request may (it is given back or replaced at the end).
      const held = (await redis.eval(CLAIM, 1, key, JSON.stringify(running), String(10 * 60_000))) as string | null;
      if (held) {
        const r = JSON.parse(held) as Record_;
        if (r.fp !== fp)
          throw new AppError(
            'IDEMPOTENCY_KEY_REUSED',
            422,
            'This Idempotency-Key was used with a different request; use a new key for a new request',
          );
        if (r.state === 'running')
          throw new AppError(
            'CONFLICT',
            409,
            'A request with this Idempotency-Key is still in progress; retry shortly',
            { 'Retry-After': '1' },
          );
        ctx.status = r.status;
        if (r.type) ctx.type = r.type;
        ctx.body = r.body;
        ctx.set('Idempotent-Replayed', 'true');
        return;
      }
      try {
        await respond(seed);
      } catch (e) {
        // A 4xx is the request's final answer; anything else may succeed on a retry.
        if (e instanceof AppError && e.status < 500 && e.status !== 429) {
          await bestEffort(
            log,
            'keeping a final idempotent answer',
            redis.set(
              key,
              JSON.stringify({ state: 'done', fp, status: e.status, body: { message: e.message, code: e.code } }),
              'EX',
              o.ttlS,
            ),
          );
        } else {
          await bestEffort(log, 'giving back an idempotency key', redis.eval(GIVE_BACK, 1, key, token));
        }
        throw e;
      }
      const body: unknown = ctx.body;
      // Only a JSON (or empty) answer can be replayed; a stream or file answer gives the key back.
      if (
        body != null &&
        (typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function')
      ) {
        await bestEffort(log, 'giving back an idempotency key', redis.eval(GIVE_BACK, 1, key, token));
        return;
      }
      const done: Record_ = {
        state: 'done',
        fp,
        status: ctx.status,
        body: body ?? null,
        type: ctx.response.type || undefined,
      };
      // The answer stands even if it cannot be kept: a retry then runs again with the same ids.
      const kept = await bestEffort(
        log,
        'keeping an idempotent answer',
        redis.set(key, JSON.stringify(done), 'EX', o.ttlS),
      );
      if (kept === undefined)
        await bestEffort(log, 'giving back an idempotency key', redis.eval(GIVE_BACK, 1, key, token));
    },
  };
}
export type Idempotency = ReturnType<typeof createIdempotency>;
