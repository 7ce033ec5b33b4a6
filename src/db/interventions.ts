import { randomBytes } from 'node:crypto';
import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import { findById } from './client.js';
import { boundedCount, page, pageIndexes, type PageQuery } from './paging.js';

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
  /** approval and pause: a pathway's human node; budget: a run stopped by a budget (docs/usage.md), answered by admins only. */
  kind: 'approval' | 'pause' | 'budget';
  title: string;
  prompt: string;
  options: string[];
  status: InterventionStatus;
  action: string | null;
  comment: string | null;
  fields: Blob | null;
  respondedBy: string | null;
  respondedAt: Date | null;
  expiresAt: Date | null;
  deliveries: DeliveryDoc[];
  createdAt: Date;
  updatedAt: Date;
}

export const interventionIndexes: IndexSpec[] = [
  // GET /v1/interventions pages by (createdAt, _id) under these equalities (src/db/paging.ts); summary=1
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
  return {
    interventions,
    find: (workspaceId: string, id: string) => findById(interventions, id, { workspaceId }),
    /**
     * The intervention a delivery token belongs to. A token is `<intervention id>.<secret>`, so it is
     * found by key (FerretDB's SQLite backend serves an `_id`-only filter from its primary key); a
     * token issued before that (32 base64url characters) is looked up on the delivery-token index.
     */
    async byToken(token: string) {
      const key = tokenKey(token);
      if (key) return findById(interventions, key);
      return LEGACY_TOKEN.test(token) ? interventions.findOne({ 'deliveries.token': token }) : null;
    },
    list: (filter: Filter<InterventionDoc> & { workspaceId: string }, q: PageQuery) =>
      page(interventions, filter, BY_CREATED, q),
    /** Rows under `filter` counted up to TOTAL_CAP + 1 (src/db/paging.ts). */
    countUpTo: (filter: Filter<InterventionDoc> & { workspaceId: string }) => boundedCount(interventions, filter),
  };
}
export type InterventionRepo = ReturnType<typeof createInterventionRepo>;
