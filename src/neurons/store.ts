import type { Page, PageQuery, PageSort } from '../kernel/store/paging.js';
import type { Neuron, NeuronChange, NeuronVersion } from './model.js';

export type { Page } from '../kernel/store/paging.js';

/** What a list shows: the workspace's neurons, visible in `brainId` when given, matching `search` in name or description. */
export interface NeuronListWhere {
  brainId?: string;
  search?: string;
  includeDeleted: boolean;
}
/** The outcome of recording a change: the version it made and the head after it, or why nothing was recorded. */
export type RecordOutcome = { made: Neuron; head: Neuron } | 'missing' | 'name_taken';

/**
 * What the neuron service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter): neuron heads and their recorded versions. Every tenant operation takes the
 * workspace; the search index's reads work across workspaces.
 */
export interface NeuronStore {
  /** The neuron of that id in the workspace, config decoded (`live`: only when not soft-deleted). */
  findById(workspaceId: string, id: string, o?: { live?: boolean }): Promise<Neuron | null>;
  /** Whether the neuron exists in the workspace (`live`: and is not soft-deleted). */
  exists(workspaceId: string, id: string, o?: { live?: boolean }): Promise<boolean>;
  /** Live neurons named `name` visible in `brainId` (the whole workspace without one), oldest first, at most 20. */
  findByName(workspaceId: string, name: string, brainId?: string): Promise<Neuron[]>;
  /** Live neurons of these ids visible in `brainId` (any order; missing ones left out). */
  findManyVisible(workspaceId: string, ids: string[], brainId?: string): Promise<Neuron[]>;
  /** Names by id (usage reports). */
  namesOf(workspaceId: string, ids: string[]): Promise<Map<string, string>>;
  /** Whether another neuron of the brain has this name. */
  nameTaken(workspaceId: string, brainId: string, name: string, exceptId: string): Promise<boolean>;
  /** A page of the workspace's neurons: visibility and search checked on the rows read in the sort's order. */
  page(workspaceId: string, where: NeuronListWhere, sort: PageSort, q: PageQuery): Promise<Page<Neuron>>;
  /** A new neuron and its version 1; false when the brain has a neuron of that name already. */
  create(n: Neuron, note: string): Promise<boolean>;
  /**
   * Records a change as the next version: concurrent edits get distinct consecutive numbers and
   * none is lost; the head then converges to the newest version. `deleted` names the state the
   * head must be in (live by default).
   */
  recordVersion(
    workspaceId: string,
    id: string,
    change: { set: NeuronChange; note: string; createdBy: string | null; deleted?: boolean },
  ): Promise<RecordOutcome>;
  /** Marks the neuron soft-deleted; the head after it, or null when it is not in the workspace. */
  softDelete(workspaceId: string, id: string): Promise<Neuron | null>;
  /** Removes the neuron: its versions first, the head last (a retry finishes the job). */
  remove(workspaceId: string, id: string): Promise<void>;
  /** One version, snapshot decoded (versions are never rewritten: a process may keep the ones it read). */
  findVersion(workspaceId: string, neuronId: string, version: number): Promise<NeuronVersion | null>;
  /** The search index's read: neurons by id (any workspace, deleted ones too). */
  searchRows(ids: string[]): Promise<Neuron[]>;
  /** The search index's walk of the live neurons, a page at a time. */
  allSearchRows(): AsyncIterable<Neuron[]>;
  /** The neuron's versions, newest first. */
  listVersions(workspaceId: string, neuronId: string): Promise<NeuronVersion[]>;
}
