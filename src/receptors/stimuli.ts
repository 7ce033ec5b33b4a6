import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../kernel/config.js';
import { AppError } from '../kernel/errors.js';

/** One key of the stimuli catalog (GET /v1/stimuli/catalog). */
export interface StimulusKey {
  key: string;
  description: string;
  schedulable: boolean;
  payload: Record<string, unknown>;
}

const resourcePayload = (type: string) => ({
  type: 'object',
  properties: {
    resource_type: { const: type },
    resource_id: { type: 'string', format: 'uuid' },
    brain_id: { type: ['string', 'null'] },
    name: { type: ['string', 'null'] },
  },
  required: ['resource_type', 'resource_id'],
});
const tick = { type: 'object', properties: { scheduled_at: { type: 'string', format: 'date-time' } } };

/**
 * The hooks a stimulus receptor can subscribe to (docs/receptors.md). `vault.` keys are resource
 * events of the knowledge lanes (published by their services when a resource is created, updated
 * or deleted), `plasticity.` keys are learning signals, `maintenance.` keys are platform jobs a
 * schedule may run (schedulable). A key ending in `.*` in a receptor's stimulus_keys matches the lane.
 */
export const STIMULI: StimulusKey[] = [
  ...(['asset', 'artifact', 'memory'] as const).flatMap((type) =>
    (['created', 'updated', 'deleted'] as const).map((what) => ({
      key: `vault.${type}.${what}`,
      description: `A ${type} of the workspace was ${what}`,
      schedulable: false,
      payload: resourcePayload(type),
    })),
  ),
  {
    key: 'plasticity.intervention.answered',
    description: 'A person answered an intervention (approval, rejection or input): feedback to learn from',
    schedulable: false,
    payload: {
      type: 'object',
      properties: {
        intervention_id: { type: 'string' },
        job_id: { type: 'string' },
        action: { type: 'string' },
        status: { type: 'string' },
      },
    },
  },
  {
    key: 'maintenance.job_sweep',
    description:
      'Jobs of the workspace pending for 30 s with no workflow: a stored run (an invoke answered 202 before its start) is started, any other fails as never started',
    schedulable: true,
    payload: tick,
  },
  {
    key: 'maintenance.schedule_reconcile',
    description: "Repairs drift between the workspace's scheduled receptors and their Temporal Schedules",
    schedulable: true,
    payload: tick,
  },
  {
    key: 'maintenance.usage_report',
    description: "Totals of the workspace's model usage over the last 24 hours, as the job result",
    schedulable: true,
    payload: tick,
  },
];
const BY_KEY = new Map(STIMULI.map((s) => [s.key, s]));

export const isKnownKey = (key: string) =>
  BY_KEY.has(key) || (key.endsWith('.*') && STIMULI.some((s) => s.key.startsWith(key.slice(0, -1))));
export const isSchedulable = (key: string) => BY_KEY.get(key)?.schedulable === true;
/** The subscription patterns that match an event key: the key itself and its lane wildcards (`vault.*`, `vault.asset.*`). */
export function patternsFor(key: string): string[] {
  const parts = key.split('.');
  return [key, ...parts.slice(0, -1).map((_, i) => `${parts.slice(0, i + 1).join('.')}.*`)];
}

/** Maximum age of a signed internal request (replays outside it are refused). */
const SIGNATURE_WINDOW_S = 300;

/** The secret server-side producers sign internal stimulus requests with (INTERNAL_SIGNING_SECRET, else derived from JWT_SECRET). */
export const internalSecret = (config: Config) =>
  config.INTERNAL_SIGNING_SECRET ??
  createHmac('sha256', config.JWT_SECRET).update('cortex:internal-stimulus').digest('hex');

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`: the header value a producer sends. */
export function signBody(secret: string, rawBody: string, at = Math.floor(Date.now() / 1000)): string {
  return `t=${at},v1=${createHmac('sha256', secret).update(`${at}.${rawBody}`).digest('hex')}`;
}

/** Checks a signature header against the raw body; 401 when missing, malformed, stale or wrong. */
export function verifySignature(
  secret: string,
  header: string | undefined,
  rawBody: string,
  now = Math.floor(Date.now() / 1000),
): void {
  const refuse = (why: string) => new AppError('AUTH_REQUIRED', 401, `Signed request required: ${why}`);
  if (!header) throw refuse('missing X-Cortex-Signature');
  const parts = Object.fromEntries(header.split(',').map((p) => p.trim().split('=') as [string, string]));
  const at = Number(parts.t);
  if (!Number.isInteger(at) || !parts.v1) throw refuse('malformed X-Cortex-Signature');
  if (Math.abs(now - at) > SIGNATURE_WINDOW_S) throw refuse('signature timestamp outside the allowed window');
  const want = createHmac('sha256', secret).update(`${at}.${rawBody}`).digest();
  const got = Buffer.from(parts.v1, 'hex');
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw refuse('signature does not match');
}
