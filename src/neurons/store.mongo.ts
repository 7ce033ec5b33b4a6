import type { Collection, Db, Filter } from 'mongodb';
import type { NeuronConfig, NeuronSnapshot } from './config-schemas.js';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { claim, claimNext, isDuplicateKey, newest } from '../kernel/store/claims.js';
import { escapeRegex, findById } from '../kernel/store/client.js';
import { searchReader } from '../kernel/store/rows.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from '../kernel/store/paging.js';
import {
  snapshotOf,
  type Neuron,
  type NeuronChange,
  type NeuronDoc,
  type NeuronVersion,
  type NeuronVersionDoc,
} from './model.js';
import type { NeuronListWhere, NeuronStore, RecordOutcome } from './store.js';

export const neuronIndexes: IndexSpec[] = [
  { collection: 'neurons', keys: { workspaceId: 1, brainId: 1, name: 1 }, unique: true, name: 'ws_brain_name_unique' },
  { collection: 'neurons', keys: { workspaceId: 1, scope: 1 }, name: 'ws_scope' },
  // GET /v1/neurons pages by (sort field, _id); visibility and search are checked on the workspace's rows read in that order.
  ...pageIndexes('neurons', ['workspaceId'], ['createdAt', 'updatedAt', 'name']),
  { collection: 'neuron_versions', keys: { neuronId: 1, version: -1 }, name: 'neuron_version' },
];

const toNeuron = (d: NeuronDoc): Neuron => ({ ...d, config: decodeBlob<NeuronConfig>(d.config, {}) });
const toDoc = (n: Neuron): NeuronDoc => ({ ...n, config: encodeBlob(n.config) });
const toVersion = (d: NeuronVersionDoc): NeuronVersion => ({
  ...d,
  snapshot: decodeBlob<NeuronSnapshot | null>(d.snapshot, null),
});

/** The head a version describes (the version documents are the record; the head is their projection). */
function headOf(head: Neuron, v: NeuronVersionDoc): Neuron {
  const snap = decodeBlob<NeuronSnapshot>(v.snapshot, snapshotOf(head));
  return {
    ...head,
    name: snap.name,
    description: snap.description,
    config: snap.neuron_config,
    isActive: snap.is_active,
    scope: snap.scope,
    version: v.version,
    updatedAt: v.createdAt,
  };
}

/** Visible in a brain: its own neurons plus workspace- and core-scoped ones; without a brain, the whole workspace. */
const visibleIn = (brainId: string | undefined): Filter<NeuronDoc> =>
  brainId ? { $or: [{ brainId }, { scope: { $in: ['workspace', 'core'] } }] } : {};

/** How many neuron versions one process keeps after reading them (`findVersion`). */
const REMEMBERED_VERSIONS = 500;

/** The collections the neuron store's parts share, and the versions this process has read. */
interface NeuronCollections {
  neurons: Collection<NeuronDoc>;
  versions: Collection<NeuronVersionDoc>;
  /** Versions read by this process, by `workspaceId:neuronId:version` (at most REMEMBERED_VERSIONS). */
  versionCache: Map<string, NeuronVersionDoc>;
}

/** The version document of `n` as it is now (`_id`: neuron id and version number). */
const versionDoc = (n: Neuron, createdBy: string | null, note: string): NeuronVersionDoc => ({
  _id: `${n._id}:${n.version}`,
  neuronId: n._id,
  workspaceId: n.workspaceId,
  version: n.version,
  snapshot: encodeBlob(snapshotOf(n)),
  createdAt: n.updatedAt,
  createdBy,
  note,
});

/** Moves the head to the newest version until it is there (a slower writer's stale projection is repaired). */
async function converge(
  { neurons, versions }: NeuronCollections,
  workspaceId: string,
  id: string,
): Promise<Neuron | null> {
  for (let i = 0; i < 20; i++) {
    const [head, newestVersion] = await Promise.all([
      findById(neurons, id, { workspaceId }),
      newest(versions, { neuronId: id }, 'version'),
    ]);
    if (!head || !newestVersion || head.version >= newestVersion.version) return head && toNeuron(head);
    const { _id: _h, ...projected } = toDoc(headOf(toNeuron(head), newestVersion));
    void _h;
    await neurons.updateOne({ _id: id, workspaceId }, { $set: projected });
  }
  const last = await findById(neurons, id, { workspaceId });
  return last && toNeuron(last);
}

/** The heads' reads: by id, by name, visible sets, names, pages, and the search index's reads. */
function createNeuronReads(
  c: NeuronCollections,
): Pick<
  NeuronStore,
  | 'findById'
  | 'exists'
  | 'findByName'
  | 'findManyVisible'
  | 'namesOf'
  | 'nameTaken'
  | 'page'
  | 'searchRows'
  | 'allSearchRows'
> {
  const { neurons } = c;
  const search = searchReader(neurons, toNeuron, { walk: { deletedAt: null } });
  return {
    findById: async (workspaceId: string, id: string, o: { live?: boolean } = {}) => {
      const d = await findById(neurons, id, { workspaceId, ...(o.live ? { deletedAt: null } : {}) });
      return d && toNeuron(d);
    },
    /** Whether the neuron exists in the workspace (`live`: and is not soft-deleted). */
    exists: async (workspaceId: string, id: string, o: { live?: boolean } = {}) =>
      (await findById(
        neurons,
        id,
        { workspaceId, ...(o.live ? { deletedAt: null } : {}) },
        { projection: { _id: 1 } },
      )) !== null,
    /** Live neurons named `name` visible in `brainId` (the whole workspace without one), oldest first, at most 20. */
    findByName: async (workspaceId: string, name: string, brainId?: string): Promise<Neuron[]> =>
      (
        await neurons
          .find({ workspaceId, deletedAt: null, name, ...visibleIn(brainId) })
          .sort({ createdAt: 1, _id: 1 })
          .limit(20)
          .toArray()
      ).map(toNeuron),
    /** Live neurons of these ids visible in `brainId` (any order; missing ones left out). */
    findManyVisible: async (workspaceId: string, ids: string[], brainId?: string): Promise<Neuron[]> =>
      ids.length === 0
        ? []
        : (
            await neurons
              .find({ workspaceId, deletedAt: null, _id: { $in: [...new Set(ids)] }, ...visibleIn(brainId) })
              .toArray()
          ).map(toNeuron),
    /** Names by id (usage reports). */
    namesOf: async (workspaceId: string, ids: string[]): Promise<Map<string, string>> =>
      new Map(
        ids.length === 0
          ? []
          : (await neurons.find({ workspaceId, _id: { $in: ids } }, { projection: { _id: 1, name: 1 } }).toArray()).map(
              (n) => [n._id, n.name],
            ),
      ),
    /** Whether another neuron of the brain has this name. */
    nameTaken: async (workspaceId: string, brainId: string, name: string, exceptId: string) =>
      (await neurons.findOne({ workspaceId, brainId, name, _id: { $ne: exceptId } })) !== null,
    page: async (workspaceId: string, where: NeuronListWhere, sort: PageSort, q: PageQuery): Promise<Page<Neuron>> => {
      const and: Filter<NeuronDoc>[] = [];
      if (where.brainId) and.push(visibleIn(where.brainId));
      if (where.search) {
        const rx = { $regex: escapeRegex(where.search), $options: 'i' };
        and.push({ $or: [{ name: rx }, { description: rx }] });
      }
      const filter: Filter<NeuronDoc> = {
        workspaceId,
        ...(where.includeDeleted ? {} : { deletedAt: null }),
        ...(and.length ? { $and: and } : {}),
      };
      const p = await page(neurons, filter, sort, q);
      return { ...p, items: p.items.map(toNeuron) };
    },
    /** The search index's reads: neurons by id (any workspace, deleted ones too) and a walk of the live ones. */
    searchRows: search.byIds,
    allSearchRows: search.all,
  };
}

/** The versions' reads: one version (remembered once read) and a neuron's list. */
function createNeuronVersionReads(c: NeuronCollections): Pick<NeuronStore, 'findVersion' | 'listVersions'> {
  const { versions, versionCache } = c;
  return {
    /**
     * One version. A version is stored once (a claim) and never rewritten, so this process keeps
     * the ones it read (REMEMBERED_VERSIONS): every child run of a map or a pathway reads its
     * pinned version, and a hit is what the store would answer. The snapshot is decoded for each
     * caller from the stored document, so no caller can change another's.
     */
    findVersion: async (workspaceId: string, neuronId: string, version: number) => {
      const key = `${workspaceId}:${neuronId}:${version}`;
      let d = versionCache.get(key);
      if (!d) {
        d = (await findById(versions, `${neuronId}:${version}`, { workspaceId })) ?? undefined;
        if (d) {
          if (versionCache.size >= REMEMBERED_VERSIONS) versionCache.delete(versionCache.keys().next().value!);
          versionCache.set(key, d);
        }
      }
      return d ? toVersion(d) : null;
    },
    listVersions: async (workspaceId: string, neuronId: string) =>
      (await versions.find({ workspaceId, neuronId }).sort({ version: -1 }).toArray()).map(toVersion),
  };
}

/** The writes: a new neuron, a change recorded as the next version, soft delete and removal. */
function createNeuronWrites(
  c: NeuronCollections,
): Pick<NeuronStore, 'create' | 'recordVersion' | 'softDelete' | 'remove'> {
  const { neurons, versions, versionCache } = c;
  return {
    /** A new neuron and its version 1; false when the brain has a neuron of that name already. */
    async create(n: Neuron, note: string): Promise<boolean> {
      try {
        await neurons.insertOne(toDoc(n));
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
      // Idempotent: a version that already exists (a retried write) is left as it was.
      await claim(versions, versionDoc(n, n.createdBy, note));
      return true;
    },
    /**
     * Records a change as the next version: the number is claimed by inserting its version
     * document (src/kernel/store/claims.ts), built on the newest version, so concurrent edits get distinct
     * consecutive numbers and none is lost; the head then converges to the newest version.
     * `deleted` names the state the head must be in (live by default).
     */
    async recordVersion(
      workspaceId: string,
      id: string,
      change: { set: NeuronChange; note: string; createdBy: string | null; deleted?: boolean },
    ): Promise<RecordOutcome> {
      const fresh = await neurons.findOne({ _id: id, workspaceId, deletedAt: change.deleted ? { $ne: null } : null });
      if (!fresh) return 'missing';
      const head = toNeuron(fresh);
      let next: Neuron = head;
      await claimNext(versions, { neuronId: id }, 'version', (prev) => {
        const base = prev && prev.version > head.version ? headOf(head, prev) : head;
        next = {
          ...base,
          ...change.set,
          version: Math.max(prev?.version ?? 0, head.version) + 1,
          updatedAt: new Date(),
        };
        return versionDoc(next, change.createdBy, change.note);
      });
      const { _id: _ignored, ...fields } = toDoc(next);
      void _ignored;
      const deleted = 'deletedAt' in change.set ? { deletedAt: change.set.deletedAt } : {};
      try {
        await neurons.updateOne({ _id: id, workspaceId }, { $set: { ...fields, ...deleted } });
      } catch (e) {
        if (isDuplicateKey(e)) return 'name_taken';
        throw e;
      }
      return { made: next, head: (await converge(c, workspaceId, id)) ?? next };
    },
    /** Marks the neuron soft-deleted; the head after it, or null when it is not in the workspace. */
    async softDelete(workspaceId: string, id: string): Promise<Neuron | null> {
      const d = await neurons.findOneAndUpdate(
        { _id: id, workspaceId },
        { $set: { deletedAt: new Date() } },
        { returnDocument: 'after' },
      );
      return d && toNeuron(d);
    },
    /** Removes the neuron: its versions first, the head last (a retry finishes the job). */
    async remove(workspaceId: string, id: string): Promise<void> {
      for (const key of versionCache.keys()) if (key.startsWith(`${workspaceId}:${id}:`)) versionCache.delete(key);
      await versions.deleteMany({ workspaceId, neuronId: id });
      await neurons.deleteOne({ _id: id, workspaceId });
    },
  };
}

/** The neuron store on MongoDB (and FerretDB): heads and their versions; every query filters by workspace. */
export function createNeuronRepo(db: Db): NeuronStore {
  const c: NeuronCollections = {
    versionCache: new Map<string, NeuronVersionDoc>(),
    neurons: db.collection<NeuronDoc>('neurons'),
    versions: db.collection<NeuronVersionDoc>('neuron_versions'),
  };
  return {
    ...createNeuronReads(c), // findById, exists, findByName, findManyVisible, namesOf, nameTaken, page, searchRows, allSearchRows
    ...createNeuronWrites(c), // create, recordVersion, softDelete, remove
    ...createNeuronVersionReads(c), // findVersion, listVersions
  };
}
