import type { Page, PageQuery } from '../kernel/store/paging.js';
import type {
  DeliveryDoc,
  Intervention,
  InterventionFilter,
  InterventionOutcome,
  InterventionStatus,
} from './model.js';

/**
 * What the intervention service asks of its store, in domain terms (store.mongo.ts is the MongoDB
 * and FerretDB adapter). Every operation takes the workspace but the lookup by delivery token (the
 * token names its intervention).
 */
export interface InterventionStore {
  /** One intervention of a workspace (by key and workspace). */
  get(workspaceId: string, id: string): Promise<Intervention | null>;
  /** The intervention a delivery token belongs to (tokens of the newer and the older form). */
  byToken(token: string): Promise<Intervention | null>;
  /** Inserts a new intervention (its id is the workflow's choice, checked absent first). */
  insert(i: Intervention): Promise<void>;
  /** A page of the workspace's interventions under the filter, newest first. */
  page(workspaceId: string, f: InterventionFilter, q: PageQuery): Promise<Page<Intervention>>;
  /** Rows under the filter counted up to COUNT_CAP + 1 (one index range). */
  countUpTo(workspaceId: string, f: InterventionFilter): Promise<number>;
  /** Records an accepted answer. */
  recordOutcome(workspaceId: string, id: string, o: InterventionOutcome): Promise<void>;
  /** Marks the intervention `status` with every delivery closed. */
  close(workspaceId: string, id: string, status: InterventionStatus, deliveries: DeliveryDoc[]): Promise<void>;
  /** The job's interventions still pending. */
  pendingOfJob(workspaceId: string, jobId: string): Promise<Intervention[]>;
}
