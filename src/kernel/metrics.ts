import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The process's Prometheus metrics (prom-client): the API serves them at GET /metrics, the
 * worker on WORKER_METRICS_PORT. One registry per process, so the services record into it
 * wherever the work happens (an API run start, a worker run end).
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'cortex_' });

const registers = [registry];
export const metrics = {
  httpRequests: new Histogram({
    name: 'cortex_http_request_duration_seconds',
    help: 'HTTP requests by route pattern, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  }),
  runsStarted: new Counter({
    name: 'cortex_runs_started_total',
    help: 'Jobs recorded, by kind (neuron, pathway, receptor, …)',
    labelNames: ['kind'] as const,
    registers,
  }),
  runsFinished: new Counter({
    name: 'cortex_runs_finished_total',
    help: 'Jobs ended, by kind and outcome (completed, failed, cancelled)',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  }),
  runDuration: new Histogram({
    name: 'cortex_run_duration_seconds',
    help: 'From job record to its end, by kind and outcome',
    labelNames: ['kind', 'outcome'] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
    registers,
  }),
  firstToken: new Histogram({
    name: 'cortex_model_first_token_seconds',
    help: 'From a model call to its first streamed token, by provider',
    labelNames: ['provider'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
    registers,
  }),
  /**
   * Commands this process sent to MongoDB (or FerretDB), by command name (find, insert, update,
   * findAndModify, aggregate, …): the round trips a run costs. Counted from the driver's command
   * monitoring events (src/kernel/store/client.ts).
   */
  mongoCommands: new Counter({
    name: 'cortex_mongo_commands_total',
    help: 'Commands sent to the document store, by command name and collection',
    labelNames: ['command', 'collection'] as const,
    registers,
  }),
  sseOpen: new Gauge({ name: 'cortex_sse_streams_open', help: 'Open server-sent-event streams', registers }),
  /**
   * What the usage reconciler found different from the ledger (docs/usage.md), by kind: rows the
   * counters had missed, stored rollups rewritten, hour counters above the ledger, budget counters corrected.
   */
  usageDrift: new Counter({
    name: 'cortex_usage_drift_total',
    help: 'Usage counters and rollups found different from the ledger, by kind',
    labelNames: ['kind'] as const,
    registers,
  }),
  rateLimited: new Counter({
    name: 'cortex_rate_limited_total',
    help: 'Requests refused with 429, by reason',
    labelNames: ['reason'] as const,
    registers,
  }),
  /** 1 while a dependency's breaker is open (src/kernel/breakers.ts): requests that need it answer 503 at once. */
  breakerOpen: new Gauge({
    name: 'cortex_dependency_breaker_open',
    help: 'Dependency breaker state (1 open, 0 closed)',
    labelNames: ['dependency'] as const,
    registers,
  }),
  /** Requests answered 503 without running to the end, by reason (capacity, deadline, dependency, client gone). */
  requestsShed: new Counter({
    name: 'cortex_requests_shed_total',
    help: 'Requests refused or abandoned, by reason',
    labelNames: ['reason'] as const,
    registers,
  }),
  admissionInFlight: new Gauge({
    name: 'cortex_admission_in_flight',
    help: 'Non-streaming requests running',
    registers,
  }),
  admissionQueued: new Gauge({
    name: 'cortex_admission_queued',
    help: 'Non-streaming requests waiting for a slot',
    registers,
  }),
};
