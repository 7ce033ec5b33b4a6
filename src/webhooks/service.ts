import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Config } from '../kernel/config.js';
import type { SecretBox } from '../crypto/secrets.js';
import type { InterventionRecord as Intervention } from '../interventions/index.js';
import type { JobRecord as Job, UnannouncedEnd } from '../jobs/index.js';
import { notFound } from '../kernel/errors.js';
import { uuidFromName } from '../kernel/ids.js';
import type { Logger } from '../kernel/logger.js';
import type { Bus } from '../kernel/events.js';
import { OutboundBlocked, type Guard } from '../net/guard.js';
import type { Scope } from '../kernel/scope.js';
import { WorkspaceIdKey } from '../temporal/definitions.js';
import type {
  WebhookDeliveryDoc,
  WebhookEndpoint,
  WebhookEvent,
  WebhookEventDoc,
  WebhookEventRecord,
  WebhookSecret,
} from './model.js';
import { createOutboxFollower, eventRow, type OutboxSource } from './outbox.js';
import { newWebhookSecret, webhookHeaders } from './signature.js';
import type { Page, PageQuery, WebhookStore } from './store.js';

/** How long the previous secret keeps signing after a rotation. */
const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** How long a follower holds the outbox rows it took before another may take them (it died meanwhile). */
const OUTBOX_HOLD_MS = 15_000;
/** Outbox rows (and unannounced job ends) a follower reads at once. */
const OUTBOX_BATCH = 100;

/** The `webhookDelivery` workflow's input: the delivery to send, and the first retry's wait. */
export interface WebhookDeliveryInput {
  workspaceId: string;
  deliveryId: string;
  retryInitialMs: number;
}

/** What one attempt came to: sent, worth another try, or never worth one (the workflow stops). */
type WebhookAttemptOutcome = { outcome: 'delivered' } | { outcome: 'retry' | 'stop'; message: string };

interface NewWebhookEndpoint {
  url: string;
  events: WebhookEvent[];
  description?: string | null;
  enabled?: boolean;
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** The `data` of a job event. */
function jobData(job: Job): Record<string, unknown> {
  return {
    job_id: job._id,
    status: job.status,
    kind: job.kind,
    brain_id: job.brainId,
    neuron_id: job.neuronId,
    pathway_id: job.pathwayId,
    receptor_id: job.receptorId,
    trace_id: job.traceId,
    parent_job_id: job.parentJobId,
    current_step: job.currentStep,
    ...(job.status === 'failed' ? { failed_reason: job.failedReason } : {}),
    ...(job.status === 'waiting' ? { waiting_for: job.waitingFor } : {}),
    created_at: iso(job.createdAt),
    finished_at: iso(job.finishedAt),
  };
}

/** The `data` of an intervention event. */
function interventionData(i: Intervention): Record<string, unknown> {
  return {
    intervention_id: i._id,
    job_id: i.jobId,
    status: i.status,
    kind: i.kind,
    brain_id: i.brainId,
    trace_id: i.traceId,
    pathway_id: i.pathwayId,
    title: i.title,
    prompt: i.prompt,
    options: i.options,
    expires_at: iso(i.expiresAt),
    created_at: iso(i.createdAt),
    ...(i.status !== 'pending'
      ? { action: i.action, comment: i.comment, responded_by: i.respondedBy, responded_at: iso(i.respondedAt) }
      : {}),
  };
}

/** The event key of a job transition: one per end, one per wait (each intervention waited on). */
function jobEventKey(job: Job): string {
  const waitingOn = job.status === 'waiting' ? (job.waitingFor?.interventionId ?? job.updatedAt.getTime()) : null;
  return `job.${job.status}:${job._id}:${job.status}${waitingOn !== null ? `:${String(waitingOn)}` : ''}`;
}

/** The job events of an end not yet announced (none for a job record that is gone). */
export function endEvents(end: UnannouncedEnd): WebhookEventRecord[] {
  const job = end.job;
  if (!job || (job.status !== 'completed' && job.status !== 'failed')) return [];
  return [
    {
      workspaceId: job.workspaceId,
      event: `job.${job.status}`,
      key: jobEventKey(job),
      at: job.finishedAt ?? job.updatedAt,
      data: jobData(job),
    },
  ];
}

/** The webhook service's deps. */
interface WebhookDeps {
  repo: WebhookStore;
  box: SecretBox;
  guard: Guard;
  temporal: Client;
  config: Config;
  log?: Logger;
  bus: Bus;
}

/** What the webhook groups share: the deps, the outbox's sources and this process's follower (one of each). */
interface WebhookContext extends WebhookDeps {
  // Sources of events recorded with their change elsewhere (job ends: their terminal claims).
  sources: OutboxSource[];
  follower: ReturnType<typeof createOutboxFollower>;
}

/** A secret sealed under the current key, valid until a rotation sets when it stops. */
const sealed = ({ box }: WebhookContext, plain: string, now: Date): WebhookSecret => ({
  sealed: box.seal(plain),
  keyId: box.keyId,
  createdAt: now,
  expiresAt: null,
});

/** The caller's workspace's endpoint, or 404. */
async function get({ repo }: WebhookContext, scope: Scope, id: string): Promise<WebhookEndpoint> {
  const e = await repo.getEndpoint(scope.workspaceId, id);
  if (!e) throw notFound('Webhook endpoint');
  return e;
}

/** Starts the delivery's workflow; a workflow of that id already started is the same delivery (no second one). */
async function startDelivery(
  { temporal, config }: WebhookContext,
  workspaceId: string,
  deliveryId: string,
): Promise<void> {
  const input: WebhookDeliveryInput = { workspaceId, deliveryId, retryInitialMs: config.WEBHOOK_RETRY_INITIAL_MS };
  try {
    await temporal.workflow.start('webhookDelivery', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `webhook-${deliveryId}`,
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [{ key: WorkspaceIdKey, value: workspaceId }],
      staticSummary: 'webhook delivery',
    });
  } catch (e) {
    if ((e as { name?: string }).name === 'WorkflowExecutionAlreadyStartedError') return;
    throw e;
  }
}

/**
 * Fans one outbox row out: one delivery per endpoint enabled and subscribed to its event now
 * (read from the store, never cached: an endpoint changed before the event was recorded is seen
 * as changed), then each delivery's workflow is started. The delivery id is name-based on the
 * endpoint and the event key, so fanning the same event out again records and sends nothing new.
 */
async function fanOut(ctx: WebhookContext, row: WebhookEventDoc): Promise<void> {
  const targets = (await ctx.repo.enabledEndpoints(row.workspaceId)).filter((e) => e.events.includes(row.event));
  if (!targets.length) return;
  const body = `{"type":${JSON.stringify(row.event)},"timestamp":${JSON.stringify(row.at.toISOString())},"data":${row.data}}`;
  await Promise.all(
    targets.map(async (e) => {
      const id = uuidFromName(`webhook-delivery:${e._id}:${row.key}`);
      const now = new Date();
      await ctx.repo.createDelivery({
        _id: id,
        workspaceId: row.workspaceId,
        endpointId: e._id,
        event: row.event,
        eventKey: row.key,
        body,
        status: 'pending',
        replayOf: null,
        attempts: [],
        failedReason: null,
        createdAt: now,
        updatedAt: now,
        finishedAt: null,
      });
      // Started even when the delivery existed: a start that failed the first time is made now.
      await startDelivery(ctx, row.workspaceId, id);
    }),
  );
}

/** Records an event in the outbox (idempotent on its key) and wakes this process's follower. */
async function record({ repo, follower }: WebhookContext, e: WebhookEventRecord): Promise<void> {
  await repo.recordEvent(eventRow(e));
  follower.wake();
}

/** An admin's management of a workspace's endpoints, their secrets and deliveries. */
function createWebhookEndpoints(ctx: WebhookContext) {
  const { repo, guard } = ctx;
  return {
    async create(scope: Scope, n: NewWebhookEndpoint): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
      await guard.checkSaved(n.url, 'url'); // and again at each send
      const now = new Date();
      const secret = newWebhookSecret();
      const endpoint = await repo.createEndpoint({
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        url: n.url,
        events: [...new Set(n.events)],
        description: n.description ?? null,
        enabled: n.enabled ?? true,
        secrets: [sealed(ctx, secret, now)],
        createdBy: scope.userId ?? scope.apiKeyId,
        createdAt: now,
        updatedAt: now,
      });
      return { endpoint, secret };
    },
    list: (scope: Scope, q: PageQuery): Promise<Page<WebhookEndpoint>> => repo.pageEndpoints(scope.workspaceId, q),
    get: (scope: Scope, id: string): Promise<WebhookEndpoint> => get(ctx, scope, id),
    async update(scope: Scope, id: string, p: Partial<NewWebhookEndpoint>): Promise<WebhookEndpoint> {
      if (p.url !== undefined) await guard.checkSaved(p.url, 'url');
      const e = await repo.updateEndpoint(scope.workspaceId, id, {
        ...(p.url !== undefined ? { url: p.url } : {}),
        ...(p.events !== undefined ? { events: [...new Set(p.events)] } : {}),
        ...(p.description !== undefined ? { description: p.description } : {}),
        ...(p.enabled !== undefined ? { enabled: p.enabled } : {}),
        updatedAt: new Date(),
      });
      if (!e) throw notFound('Webhook endpoint');
      return e;
    },
    async remove(scope: Scope, id: string): Promise<void> {
      if (!(await repo.removeEndpoint(scope.workspaceId, id))) throw notFound('Webhook endpoint');
    },
    /** A new current secret; the previous one keeps signing for SECRET_OVERLAP_MS (older ones stop now). */
    async rotateSecret(scope: Scope, id: string): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
      const cur = await repo.endpointForSigning(scope.workspaceId, id);
      if (!cur) throw notFound('Webhook endpoint');
      const now = new Date();
      const secret = newWebhookSecret();
      const previous = cur.secrets.find((s) => s.expiresAt === null) ?? cur.secrets[0];
      const secrets = [
        sealed(ctx, secret, now),
        ...(previous ? [{ ...previous, expiresAt: new Date(now.getTime() + SECRET_OVERLAP_MS) }] : []),
      ];
      const endpoint = await repo.setSecrets(scope.workspaceId, id, secrets, now);
      if (!endpoint) throw notFound('Webhook endpoint');
      return { endpoint, secret };
    },
    async deliveries(scope: Scope, id: string, q: PageQuery): Promise<Page<WebhookDeliveryDoc>> {
      await get(ctx, scope, id);
      return repo.pageDeliveries(scope.workspaceId, id, q);
    },
    /** A new delivery of the same event (the same body) to the same endpoint, sent as any other. */
    async replay(scope: Scope, id: string, deliveryId: string): Promise<WebhookDeliveryDoc> {
      await get(ctx, scope, id);
      const original = await repo.getDelivery(scope.workspaceId, deliveryId);
      if (!original || original.endpointId !== id) throw notFound('Webhook delivery');
      const now = new Date();
      const doc: WebhookDeliveryDoc = {
        ...original,
        _id: randomUUID(),
        status: 'pending',
        replayOf: original._id,
        attempts: [],
        failedReason: null,
        createdAt: now,
        updatedAt: now,
        finishedAt: null,
      };
      await repo.createDelivery(doc);
      await startDelivery(ctx, scope.workspaceId, doc._id);
      return doc;
    },
  };
}

/** Events recorded in the outbox, and this process's follower that fans them out. */
function createWebhookEvents(ctx: WebhookContext) {
  const { config, follower } = ctx;
  return {
    /**
     * A job became completed, failed or waiting, once stored (awaited by the transition). A wait's
     * event is recorded here, as part of the transition; an end's was recorded with its terminal
     * claim (the `job-ends` source), so this only wakes the follower.
     */
    async onJob(job: Job): Promise<void> {
      if (job.status === 'completed' || job.status === 'failed') return follower.wake();
      if (job.status !== 'waiting') return;
      await record(ctx, {
        workspaceId: job.workspaceId,
        event: 'job.waiting',
        key: jobEventKey(job),
        at: job.updatedAt,
        data: jobData(job),
      });
    },
    /** An intervention was created, or answered, once stored (awaited by the change): its event is recorded. */
    async onIntervention(change: 'created' | 'answered', i: Intervention): Promise<void> {
      await record(ctx, {
        workspaceId: i.workspaceId,
        event: `intervention.${change}`,
        key: `intervention.${change}:${i._id}`,
        at: change === 'created' ? i.createdAt : (i.respondedAt ?? i.updatedAt),
        data: interventionData(i),
      });
    },
    /** Records an event of another area (an experiment's end) in the outbox, idempotent on its key. */
    recordEvent: (e: WebhookEventRecord): Promise<void> => record(ctx, e),
    /** Adds a durable record of changes whose events the follower fans out (job ends: their terminal claims). */
    addSource(source: OutboxSource): void {
      ctx.sources.push(source);
    },
    /** Starts this process's outbox follower (every API and worker process runs one; WEBHOOK_OUTBOX_FOLLOW). */
    follow(): void {
      if (config.WEBHOOK_OUTBOX_FOLLOW) follower.start();
    },
    /** Stops the follower (shutdown); what it held falls due again for another. */
    stopFollowing: (): Promise<void> => follower.stop(),
    /** One follower round now, whatever WEBHOOK_OUTBOX_FOLLOW says (tests; an operator's drain). */
    drainOutbox: () => follower.round(),
  };
}

/** Sending: one attempt of a delivery (the workflow's activity), its failure, and key rotation. */
function createWebhookSending(ctx: WebhookContext) {
  const { repo, box, guard } = ctx;
  return {
    /**
     * One attempt at sending a delivery (the workflow's activity; `attempt` is its attempt number):
     * signed with every secret still valid, sent through the outbound guard, recorded. A 2xx
     * delivers; a 4xx other than 408 and 429, or a URL the guard refuses, is never retried.
     */
    async attempt(workspaceId: string, deliveryId: string, attempt: number): Promise<WebhookAttemptOutcome> {
      const delivery = await repo.getDelivery(workspaceId, deliveryId);
      if (!delivery) return { outcome: 'stop', message: 'the delivery no longer exists' };
      if (delivery.status === 'delivered') return { outcome: 'delivered' };
      if (delivery.status === 'failed') return { outcome: 'stop', message: delivery.failedReason ?? 'failed' };
      const endpoint = await repo.endpointForSigning(workspaceId, delivery.endpointId);
      if (!endpoint) return { outcome: 'stop', message: 'the endpoint was deleted' };
      if (!endpoint.enabled) return { outcome: 'stop', message: 'the endpoint was disabled' };
      const now = new Date();
      const secrets = endpoint.secrets
        .filter((s) => s.expiresAt === null || s.expiresAt > now)
        .map((s) => box.open(s.sealed));
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'Cortex-Webhooks/1',
        ...webhookHeaders(secrets, delivery._id, Math.floor(now.getTime() / 1000), delivery.body),
      };
      const t0 = performance.now();
      let statusCode: number | null = null;
      let error: string | null = null;
      let refused = false;
      try {
        const res = await guard.fetch(endpoint.url, {
          method: 'POST',
          headers,
          body: delivery.body,
          redirect: 'manual',
        });
        statusCode = res.status;
        await res.body?.cancel().catch(() => undefined);
      } catch (e) {
        error = (e as Error).message || String(e);
        refused = e instanceof OutboundBlocked && /resolves to a|not allowed|not a valid URL/.test(error);
      }
      const durationMs = Math.round(performance.now() - t0);
      await repo.recordAttempt(workspaceId, deliveryId, { attempt, at: now, statusCode, error, durationMs });
      if (statusCode !== null && statusCode >= 200 && statusCode < 300) {
        await repo.finishDelivery(workspaceId, deliveryId, 'delivered', null);
        return { outcome: 'delivered' };
      }
      const message = error ?? `the endpoint answered ${statusCode}`;
      const permanent =
        refused || (statusCode !== null && statusCode >= 400 && statusCode < 500 && ![408, 429].includes(statusCode));
      return { outcome: permanent ? 'stop' : 'retry', message };
    },
    /** Ends a delivery the workflow gave up on (a refusal, or retries ran out). */
    fail: (workspaceId: string, deliveryId: string, reason: string): Promise<void> =>
      repo.finishDelivery(workspaceId, deliveryId, 'failed', reason),

    /** Key rotation: re-seals every endpoint secret under the current key. */
    resealAll: (): Promise<number> => repo.resealAll(box.keyId, (s) => box.reseal(s)),
  };
}

/**
 * Signed webhooks (docs/webhooks.md): admins manage a workspace's endpoints; job and intervention
 * events are recorded in an outbox as part of the change they report (a job's end through its
 * terminal claim, a wait or an intervention by the writer before its call returns), and the
 * outbox's follower (one in every API and worker process) fans each out to the endpoints
 * subscribed at that moment: one delivery each, sent by a durable `webhookDelivery` workflow whose
 * activity makes one attempt (`attempt`) through the outbound guard, signed per Standard Webhooks
 * with every secret still valid.
 */
export function createWebhookService(d: WebhookDeps) {
  const ctx: WebhookContext = {
    ...d,
    sources: [],
    follower: createOutboxFollower({
      store: d.repo,
      sources: () => ctx.sources,
      fanOut: (row) => fanOut(ctx, row),
      options: { pollMs: d.config.WEBHOOK_OUTBOX_POLL_MS, holdMs: OUTBOX_HOLD_MS, batch: OUTBOX_BATCH },
      log: d.log,
    }),
  };
  const service = {
    ...createWebhookEndpoints(ctx), // create, list, get, update, remove, rotateSecret, deliveries, replay
    ...createWebhookEvents(ctx), // onJob, onIntervention, recordEvent, addSource, follow, stopFollowing, drainOutbox
    ...createWebhookSending(ctx), // attempt, fail, resealAll
  };
  // Each job that became completed, failed or waiting (awaited by the transition: a failure fails it).
  d.bus.on('job.status', (job) => service.onJob(job));
  d.bus.on('intervention.changed', ({ change, intervention }) => service.onIntervention(change, intervention));
  return service;
}
