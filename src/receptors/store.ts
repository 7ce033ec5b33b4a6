import type { Page, PageQuery, PageSort } from '../kernel/store/paging.js';
import type {
  ActionPlan,
  BindingChange,
  BindingListWhere,
  ChannelBinding,
  Firing,
  Receptor,
  ReceptorChange,
  ReceptorListWhere,
  ReceptorTargetKind,
} from './model.js';

export type { Page } from '../kernel/store/paging.js';

/**
 * The records receptors leave when they fire, in domain terms (firings.mongo.ts is the MongoDB and
 * FerretDB adapter, a part of the receptor store): firings, action plans and channel bindings.
 */
export interface ReceptorFiringStore {
  /** Records a firing; false when it is recorded already (the same event, or a retried step). */
  recordFiring(f: Firing): Promise<boolean>;
  /** One firing of the workspace, or null. */
  findFiring(workspaceId: string, id: string): Promise<Firing | null>;
  /** Marks the firing running (started now). */
  markFiringRunning(workspaceId: string, id: string): Promise<void>;
  /** The firing's outcome. By its id alone when the workspace is not given: the fire workflow's own record, named by its workflow id. */
  finishFiring(
    id: string,
    status: 'completed' | 'failed' | 'skipped',
    reason: string | null,
    workspaceId?: string,
  ): Promise<void>;
  /** Recent firings of a receptor (newest first). */
  recentFirings(workspaceId: string, receptorId: string, limit: number): Promise<Firing[]>;
  /** Records a proposed plan; false when it is recorded already (a retried step). */
  proposePlan(p: ActionPlan): Promise<boolean>;
  /** Records the job that executes the plan. */
  setPlanExecution(workspaceId: string, id: string, executionJobId: string): Promise<void>;
  /** Marks a plan executed; the plan as it was, or null when it is not in the workspace. */
  markPlanExecuted(workspaceId: string, id: string): Promise<ActionPlan | null>;
  /** The search index's read: action plans by id, whatever their workspace. */
  planSearchRows(ids: string[]): Promise<ActionPlan[]>;
  /** The search index's walk of every action plan, a page at a time. */
  allPlanSearchRows(): AsyncIterable<ActionPlan[]>;
  /** One channel binding of the workspace, or null. */
  findBinding(workspaceId: string, id: string): Promise<ChannelBinding | null>;
  /** The binding of a conversation, whatever its workspace (the webhook ingress: a conversation reaches one receptor). */
  bindingFor(channel: string, externalId: string): Promise<ChannelBinding | null>;
  /** A page of the workspace's bindings that the list shows, newest first. */
  pageBindings(workspaceId: string, where: BindingListWhere, q: PageQuery): Promise<Page<ChannelBinding>>;
  /** A new binding; false when the conversation is bound already. */
  createBinding(b: ChannelBinding): Promise<boolean>;
  /** Changes a binding; false when the new conversation is bound already. */
  updateBinding(workspaceId: string, id: string, set: BindingChange): Promise<boolean>;
  /** Removes a binding. */
  removeBinding(workspaceId: string, id: string): Promise<void>;
}

/**
 * What the receptor services ask of their store, in domain terms (store.mongo.ts is the MongoDB
 * and FerretDB adapter): receptors (config and source_config decoded), and the records they leave
 * when they fire (ReceptorFiringStore). Every query takes the workspace, except the schedule
 * reconciler's scan, the webhook ingress's lookup of a conversation (unique on the platform), the
 * fire workflow's own record (keyed by its workflow id) and the search index's reads.
 */
export interface ReceptorStore extends ReceptorFiringStore {
  /** One receptor of the workspace, or null. */
  findById(workspaceId: string, id: string): Promise<Receptor | null>;
  /** Whether the receptor exists in the workspace. */
  exists(workspaceId: string, id: string): Promise<boolean>;
  /** The workspace's receptor of that slug, or null. */
  findBySlug(workspaceId: string, slug: string): Promise<Receptor | null>;
  /** The receptor a target owns (subscriptions to it left out), or null. */
  ownReceptorOf(workspaceId: string, kind: ReceptorTargetKind, id: string): Promise<Receptor | null>;
  /** Every receptor that dispatches this target (its own and subscriptions to it). */
  allForTarget(workspaceId: string, kind: ReceptorTargetKind, id: string): Promise<Receptor[]>;
  /** Slugs and target kinds by id (usage reports). */
  labelsOf(workspaceId: string, ids: string[]): Promise<Map<string, { slug: string; kind: string }>>;
  /** A page of the workspace's receptors that the list shows, in `sort` order. */
  page(workspaceId: string, where: ReceptorListWhere, sort: PageSort, q: PageQuery): Promise<Page<Receptor>>;
  /** A new receptor; false when its slug is taken in the workspace. */
  create(r: Receptor): Promise<boolean>;
  /** Applies the change to the workspace's receptor (nothing when it is not there). */
  update(workspaceId: string, id: string, set: ReceptorChange): Promise<void>;
  /** Removes a receptor and its channel bindings. */
  remove(workspaceId: string, id: string): Promise<void>;
  /** The stimulus receptors of a workspace that subscribe to any of these patterns (event activation). */
  subscribers(workspaceId: string, patterns: string[]): Promise<Receptor[]>;
  /** Every receptor with a schedule, across workspaces (the start-up reconciler). */
  scheduled(): Promise<Receptor[]>;
  /** The search index's read: receptors by id, whatever their workspace. */
  searchRows(ids: string[]): Promise<Receptor[]>;
  /** The search index's walk of every receptor, a page at a time. */
  allSearchRows(): AsyncIterable<Receptor[]>;
}
