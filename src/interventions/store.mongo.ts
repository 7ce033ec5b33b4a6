import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { findById } from '../kernel/store/client.js';
import { boundedCount, page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';
import {
  tokenKey,
  type DeliveryDoc,
  type Intervention,
  type InterventionDoc,
  type InterventionFilter,
  type InterventionOutcome,
  type InterventionStatus,
} from './model.js';
import type { InterventionStore } from './store.js';

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
/** A delivery token of the older form (before tokens carried their intervention's id). */
const LEGACY_TOKEN = /^[A-Za-z0-9_-]{32}$/;

/** The intervention store on MongoDB (and FerretDB); every tenant operation is scoped to the workspace in its filter. */
export function createInterventionRepo(db: Db): InterventionStore {
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
