import { randomBytes } from 'node:crypto';
import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob, type Blob } from '../kernel/store/codec.js';
import { findById } from '../kernel/store/client.js';
import { boundedCount, page, pageIndexes, TOTAL_CAP, type Page, type PageQuery } from '../kernel/store/paging.js';

export type { Page, PageQuery } from '../kernel/store/paging.js';
/** Above this many rows a count stops (it reads TOTAL_CAP + 1: "more than TOTAL_CAP"). */
export const COUNT_CAP = TOTAL_CAP;

export type InterventionStatus = 'pending' | 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';

/** One way the request reached a person; each delivery has its own public token. */
export interface DeliveryDoc {
  id: string;
  channel: 'api' | 'link';
  token: string;
  status: 'pending' | 'responded' | 'closed';
  createdAt: Date;
  respondedAt: Date | null;
}

export interface InterventionDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  jobId: string;
  traceId: string | null;
  pathwayId: string | null;
  nodeIndex: number;
  /**
   * approval and pause: a pathway's human node; budget: a run stopped by a budget (docs/usage.md), answered
   * by admins only; tool_call: a neuron's tool call waiting for a person (neuron_config.tool_approval).
   */
  kind: 'approval' | 'pause' | 'budget' | 'tool_call';
  title: string;
  prompt: string;
  options: string[];
  status: InterventionStatus;
  action: string | null;
  comment: string | null;
  fields: Blob | null;
  /** What the person decides on (a tool call: its tool, redacted arguments and turn); absent on older records. */
  payload?: Blob | null;
  respondedBy: string | null;
  respondedAt: Date | null;
  expiresAt: Date | null;
  deliveries: DeliveryDoc[];
  createdAt: Date;
  updatedAt: Date;
}

/** An intervention as services see it: the answered `fields` decoded. */
export interface Intervention extends Omit<InterventionDoc, 'fields' | 'payload'> {
  fields: Record<string, unknown> | null;
  payload: Record<string, unknown> | null;
}

/** What an intervention list may filter on (the workspace is the call's own argument). */
export interface InterventionFilter {
  brainId?: string;
  jobId?: string;
  traceId?: string;
  status?: InterventionStatus;
}

/** The outcome an accepted answer records. */
export interface InterventionOutcome {
  status: InterventionStatus;
  action: string;
  comment: string | null;
  fields: Record<string, unknown> | null;
  respondedBy: string | null;
  respondedAt: Date;
  deliveries: DeliveryDoc[];
  updatedAt: Date;
}

const decodeIntervention = ({ fields, payload, ...i }: InterventionDoc): Intervention => ({
  ...i,
  fields: fields ? decodeBlob<Record<string, unknown>>(fields, {}) : null,
  payload: payload ? decodeBlob<Record<string, unknown>>(payload, {}) : null,
});
const decoded = (i: InterventionDoc | null) => i && decodeIntervention(i);

export const interventionIndexes: IndexSpec[] = [
  // GET /v1/interventions pages by (createdAt, _id) under these equalities (src/kernel/store/paging.ts); summary=1
  // counts each status (capped) on the status ones.
  ...pageIndexes('interventions', ['workspaceId'], ['createdAt']),
  ...pageIndexes('interventions', ['workspaceId', 'brainId'], ['createdAt']),
  ...pageIndexes('interventions', ['workspaceId', 'status'], ['createdAt']),
  ...pageIndexes('interventions', ['workspaceId', 'brainId', 'status'], ['createdAt']),
  ...pageIndexes('interventions', ['workspaceId', 'jobId'], ['createdAt']),
  ...pageIndexes('interventions', ['workspaceId', 'traceId'], ['createdAt']),
  // Tokens issued before they carried their intervention's id (see tokenKey).
  { collection: 'interventions', keys: { 'deliveries.token': 1 }, name: 'delivery_token' },
];

const BY_CREATED = { field: 'createdAt', dir: -1 } as const;
const LEGACY_TOKEN = /^[A-Za-z0-9_-]{32}$/;
const TOKEN_RE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[A-Za-z0-9_-]{32,}$/;
/** A delivery token: the intervention's id, a dot, and a secret. */
export const newDeliveryToken = (interventionId: string) =>
  `${interventionId}.${randomBytes(24).toString('base64url')}`;
/** The intervention id a token names, or null for a token of the older form. */
export const tokenKey = (token: string): string | null => TOKEN_RE.exec(token)?.[1] ?? null;

export function createInterventionRepo(db: Db) {
  const interventions = db.collection<InterventionDoc>('interventions');
  const where = (workspaceId: string, f: InterventionFilter): Filter<InterventionDoc> => ({ workspaceId, ...f });
  return {
    get: async (workspaceId: string, id: string) => decoded(await findById(interventions, id, { workspaceId })),
    /**
     * The intervention a delivery token belongs to. A token is `<intervention id>.<secret>`, so it is
     * found by key (FerretDB's SQLite backend serves an `_id`-only filter from its primary key); a
     * token issued before that (32 base64url characters) is looked up on the delivery-token index.
     */
    async byToken(token: string): Promise<Intervention | null> {
      const key = tokenKey(token);
      if (key) return decoded(await findById(interventions, key));
      return LEGACY_TOKEN.test(token) ? decoded(await interventions.findOne({ 'deliveries.token': token })) : null;
    },
    /** Inserts a new intervention (its id is the workflow's choice, checked absent first). */
    insert: async (i: Intervention): Promise<void> => {
      await interventions.insertOne({
        ...i,
        fields: i.fields ? encodeBlob(i.fields) : null,
        payload: i.payload ? encodeBlob(i.payload) : null,
      });
    },
    async page(workspaceId: string, f: InterventionFilter, q: PageQuery): Promise<Page<Intervention>> {
      const p = await page(interventions, where(workspaceId, f), BY_CREATED, q);
      return { ...p, items: p.items.map(decodeIntervention) };
    },
    /** Rows under the filter counted up to COUNT_CAP + 1 (one index range). */
    countUpTo: (workspaceId: string, f: InterventionFilter) => boundedCount(interventions, where(workspaceId, f)),
    /** Records an accepted answer. */
    recordOutcome: async (workspaceId: string, id: string, o: InterventionOutcome): Promise<void> => {
      const set = { ...o, fields: o.fields ? encodeBlob(o.fields) : null };
      await interventions.updateOne({ _id: id, workspaceId }, { $set: set });
    },
    /** Marks the intervention `status` with every delivery closed. */
    close: async (workspaceId: string, id: string, status: InterventionStatus, deliveries: DeliveryDoc[]) => {
      await interventions.updateOne({ _id: id, workspaceId }, { $set: { status, updatedAt: new Date(), deliveries } });
    },
    /** The job's interventions still pending. */
    pendingOfJob: async (workspaceId: string, jobId: string): Promise<Intervention[]> =>
      (await interventions.find({ workspaceId, jobId, status: 'pending' }).toArray()).map(decodeIntervention),
  };
}
export type InterventionRepo = ReturnType<typeof createInterventionRepo>;

// The interventions area's entry in the kernel's event map (src/kernel/events.ts).
declare module '../kernel/events.js' {
  interface Events {
    /** An intervention was created or answered, once stored (signed webhooks subscribe). Awaited by the change. */
    'intervention.changed': { change: 'created' | 'answered'; intervention: Intervention };
  }
}
