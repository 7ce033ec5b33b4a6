import { setMaxListeners } from 'node:events';
import type { Context } from 'koa';
import type { Connection } from '@temporalio/client';
import type { Breakers, Dependency } from '../../src/kernel/breakers.js';
import type { Config } from '../../src/kernel/config.js';
import { unavailable } from '../../src/kernel/errors.js';
import { metrics } from '../../src/kernel/metrics.js';
import { runInRequest, type RequestContext } from '../../src/kernel/request-context.js';
import type { Admission } from './admission.js';

/** What the guard needs to know of a route. */
export interface GuardedRoute {
  /** stream: an SSE route (exempt from admission and deadline once set up); health: exempt from breakers and admission. */
  kind: 'request' | 'stream' | 'health';
  /** The route's own deadline, where its work is known to take longer than a plain read or write. */
  deadlineMs?: number;
}

/** Dependencies without which no API request can do anything (auth, rate limits and data). */
const ALWAYS: readonly Dependency[] = ['mongodb', 'redis'];
const HEALTH_DEADLINE_MS = 2_000;

const shed = (reason: string, e: Error) => {
  metrics.requestsShed.inc({ reason });
  return e;
};

/**
 * Bounded waits for every request (docs/operations.md):
 * - a request that needs a dependency whose breaker is open is answered 503 with Retry-After at once;
 * - every non-streaming request has a deadline (REQUEST_DEADLINE_MS, UPLOAD_DEADLINE_MS for bodies
 *   that are not JSON, a route's own `deadlineMs`); past it, or when a breaker it depends on opens,
 *   or when its client leaves, it is abandoned: answered 503 (if anyone is still listening), and
 *   every store call it has not started yet fails instead of running (src/kernel/store/guard.ts), as does
 *   every Temporal call (the connection's abort signal);
 * - admission control bounds how many run at once (`admit`, after authentication: fair per workspace).
 * Work a request leaves behind after it has answered (a workflow start after a 202) is no longer
 * bounded by its deadline.
 */
export function createRequestGuard(d: {
  config: Config;
  breakers: Breakers;
  admission: Admission;
  temporal: Connection;
}) {
  const { config, breakers, admission } = d;
  return {
    /**
     * Runs `work` for the request; `work` calls `admit(tenant)` once it knows the tenant (after
     * authentication), which waits for an admission slot.
     */
    async run(
      route: GuardedRoute,
      ctx: Context,
      work: (admit: (tenant: string) => Promise<void>) => Promise<void>,
    ): Promise<void> {
      if (route.kind !== 'health') {
        const down = breakers.firstOpen(ALWAYS);
        if (down)
          throw shed(
            'dependency',
            unavailable(`The platform's ${down === 'mongodb' ? 'store' : 'Redis'} is unavailable; retry shortly`, 2),
          );
      }
      const started = (ctx.state.startedAt as number | undefined) ?? Date.now();
      const upload = !!ctx.request.length && !ctx.is('application/json', '+json');
      const ms =
        route.kind === 'health'
          ? HEALTH_DEADLINE_MS
          : (route.deadlineMs ?? (upload ? config.UPLOAD_DEADLINE_MS : config.REQUEST_DEADLINE_MS));
      const ctl = new AbortController();
      // Every store call of the request listens on its signal (src/kernel/store/guard.ts): many at once is normal.
      setMaxListeners(0, ctl.signal);
      const rc: RequestContext = { deadline: started + ms, signal: ctl.signal };
      // A request whose write is stored (markCommitted) is no longer abandoned: it answers its success.
      const abandon = (reason: string, e: Error) => {
        if (!ctl.signal.aborted && !rc.committed) ctl.abort(shed(reason, e));
      };
      const timer = setTimeout(
        () => abandon('deadline', unavailable(`The request did not finish within ${ms} ms; retry shortly`, 1)),
        Math.max(0, rc.deadline - Date.now()),
      );
      const offBreaker = breakers.onOpen((dep) => {
        if (route.kind !== 'health' && ALWAYS.includes(dep))
          abandon(
            'dependency',
            unavailable(`The platform's ${dep === 'mongodb' ? 'store' : 'Redis'} is unavailable; retry shortly`, 2),
          );
      });
      // Temporal calls fail at once while Temporal's breaker is open, and when the request is abandoned.
      const temporalCtl = new AbortController();
      setMaxListeners(0, temporalCtl.signal);
      const stopTemporal = () => temporalCtl.abort(unavailable('Temporal is unavailable; retry shortly', 2));
      if (breakers.isOpen('temporal')) stopTemporal();
      const offTemporal = breakers.onOpen((dep) => {
        if (dep === 'temporal') stopTemporal();
      });
      ctl.signal.addEventListener('abort', () => temporalCtl.abort(ctl.signal.reason), { once: true });
      const onClose = () => {
        if (!ctx.res.writableFinished) abandon('client-gone', unavailable('The client closed the connection', 1));
      };
      ctx.res.once('close', onClose);

      let release: (() => void) | undefined;
      const admit = async (tenant: string) => {
        if (route.kind !== 'request') return;
        release = await admission.acquire(tenant, rc.deadline);
        // A slot that arrives after the request was abandoned is given back at once.
        if (ctl.signal.aborted) {
          release();
          release = undefined;
          throw ctl.signal.reason as Error;
        }
      };
      const running = runInRequest(rc, () => d.temporal.withAbortSignal(temporalCtl.signal, () => work(admit)));
      const settled = running.finally(() => {
        release?.();
        // What the request leaves behind once answered is not bounded by its deadline.
        rc.deadline = Number.POSITIVE_INFINITY;
      });
      // Silent on purpose: its error is `running`'s, which the race below answers (or the request was abandoned first).
      settled.catch(() => undefined);
      const abandoned = new Promise<never>((_, reject) => {
        if (ctl.signal.aborted) reject(ctl.signal.reason as Error);
        ctl.signal.addEventListener('abort', () => reject(ctl.signal.reason as Error), { once: true });
      });
      abandoned.catch(() => undefined); // raced below, which throws its reason: only no unhandled rejection
      try {
        await Promise.race([running, abandoned]);
      } finally {
        clearTimeout(timer);
        offBreaker();
        offTemporal();
        // A stream keeps its connection; its close is the stream's own business from here.
        ctx.res.off('close', onClose);
      }
    },
  };
}
export type RequestGuard = ReturnType<typeof createRequestGuard>;
