import type { Deps } from '../deps.js';
import { createAuthService } from './auth.js';
import { createHealthService } from './health.js';
import { createTraceService } from './traces.js';

/** Builds every service from the one dependency bag; the API and the worker share it. */
export function createServices(deps: Deps) {
  const auth = createAuthService({ config: deps.config, repo: deps.repos.workspaces });
  const traces = createTraceService({ repo: deps.repos.traces, streams: deps.streams });
  const health = createHealthService(deps);
  return { auth, traces, health, workspaces: deps.repos.workspaces, streams: deps.streams, redis: deps.redis, config: deps.config };
}
export type Services = ReturnType<typeof createServices>;
