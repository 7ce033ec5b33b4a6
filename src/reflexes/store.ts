import type { Page, PageQuery, PageSort } from '../kernel/store/paging.js';
import type { NeuronReflexDoc, Reflex, ReflexChange, ReflexListWhere } from './model.js';

/**
 * What the reflex service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter): reflexes (metadata decoded) and their assignments to neurons. Every tenant
 * operation takes the workspace; the search index's reads work across workspaces.
 */
export interface ReflexStore {
  /** One reflex of the workspace, or null. */
  findById(workspaceId: string, id: string): Promise<Reflex | null>;
  /** Reflexes of these ids (any order; missing ones left out). */
  findMany(workspaceId: string, ids: string[]): Promise<Reflex[]>;
  /** Up to `limit` reflexes of the workspace, in store order. */
  someOfWorkspace(workspaceId: string, limit: number): Promise<Reflex[]>;
  /** A page of the workspace's reflexes that the list shows, in `sort` order. */
  page(workspaceId: string, where: ReflexListWhere, sort: PageSort, q: PageQuery): Promise<Page<Reflex>>;
  /** Records a new reflex. */
  create(r: Reflex): Promise<void>;
  /** The reflex after the change, or null when it is not in the workspace. */
  update(workspaceId: string, id: string, set: ReflexChange): Promise<Reflex | null>;
  /** Removes the reflex: its links first, the reflex last (a retry finishes the job). */
  remove(workspaceId: string, id: string): Promise<void>;
  /** The search index's read: reflexes by id, whatever their workspace. */
  searchRows(ids: string[]): Promise<Reflex[]>;
  /** The search index's walk of every reflex, a page at a time. */
  allSearchRows(): AsyncIterable<Reflex[]>;
  /** The neuron's assignments, oldest first. */
  linksOfNeuron(workspaceId: string, neuronId: string): Promise<NeuronReflexDoc[]>;
  /** Records an assignment; false when the reflex is assigned to the neuron already. */
  link(l: NeuronReflexDoc): Promise<boolean>;
  /** Drops one assignment; false when there was none. */
  unlink(workspaceId: string, neuronId: string, reflexId: string): Promise<boolean>;
  /** Drops every link of a neuron (the neuron is being removed). */
  unlinkNeuron(workspaceId: string, neuronId: string): Promise<void>;
  /** Drops every link of a reflex (the reflex is being removed). */
  unlinkReflex(workspaceId: string, reflexId: string): Promise<void>;
}
