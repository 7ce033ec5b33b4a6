import { randomUUID } from 'node:crypto';
import type { Db, Document } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { claim } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';
import { EXPERIMENT_TERMINAL } from './model.js';
import type {
  DatasetDoc,
  DatasetItem,
  DatasetItemDoc,
  Experiment,
  ExperimentDoc,
  ExperimentItem,
  ExperimentItemDoc,
} from './model.js';
import type { EvaluationStore, NewItem } from './store.js';

export const evaluationIndexes: IndexSpec[] = [
  // GET /v1/datasets pages a brain's datasets newest first; GET /v1/experiments a workspace's (src/kernel/store/paging.ts).
  ...pageIndexes('eval_datasets', ['workspaceId', 'brainId'], ['createdAt']),
  ...pageIndexes('eval_experiments', ['workspaceId'], ['createdAt']),
  // A dataset's items in the order they were added (any version reads the same range).
  ...pageIndexes('eval_dataset_items', ['workspaceId', 'datasetId'], ['seq']),
  // An experiment's item rows in dataset order.
  ...pageIndexes('eval_experiment_items', ['workspaceId', 'experimentId'], ['seq']),
];

const decodeItem = ({ input, expected, metadata, ...d }: DatasetItemDoc): DatasetItem => ({
  ...d,
  input: decodeBlob<unknown>(input, null),
  expected: decodeBlob<unknown>(expected, null),
  metadata: decodeBlob<Record<string, unknown> | null>(metadata, null),
});
const decodeRun = ({ output, ...d }: ExperimentItemDoc): ExperimentItem => ({
  ...d,
  output: decodeBlob<unknown>(output, null),
});
/** A run's output as stored: null (or undefined) is no output, anything else its JSON text. */
const encodeOutput = (output: unknown): ExperimentItemDoc['output'] =>
  output === null || output === undefined ? null : encodeBlob(output, 'output');
const encodeRun = ({ output, ...r }: ExperimentItem): ExperimentItemDoc => ({ ...r, output: encodeOutput(output) });

/**
 * An experiment with its run scope decoded; one stored without a readable scope acts as the
 * system in the experiment's workspace.
 */
const decodeExperiment = ({ scope, ...d }: ExperimentDoc): Experiment => ({
  ...d,
  scope: decodeBlob<Experiment['scope']>(scope, {
    workspaceId: d.workspaceId,
    userId: null,
    apiKeyId: null,
    roles: [],
    credential: 'system',
  }),
});
const encodeExperiment = ({ scope, ...e }: Experiment): ExperimentDoc => ({ ...e, scope: encodeBlob(scope) });

/** The items of version `v`: added at or before it, not removed at or before it. */
/** `removedIn` of an item one remover has claimed and not yet marked: later than any version, so live in all. */
const PENDING_REMOVAL = Number.MAX_SAFE_INTEGER;

const atVersion = (workspaceId: string, datasetId: string, v: number): Document => ({
  workspaceId,
  datasetId,
  addedIn: { $lte: v },
  $or: [{ removedIn: null }, { removedIn: { $gt: v } }],
});

/**
 * The evaluations store on MongoDB (and FerretDB): datasets and their versioned items,
 * experiments and their per-item rows. Every operation filters on the workspace.
 */
export function createEvaluationRepo(db: Db): EvaluationStore {
  const datasets = db.collection<DatasetDoc>('eval_datasets');
  const items = db.collection<DatasetItemDoc>('eval_dataset_items');
  const experiments = db.collection<ExperimentDoc>('eval_experiments');
  const runs = db.collection<ExperimentItemDoc>('eval_experiment_items');

  /** Moves the dataset to its next version (and `items` more positions); the document after. */
  const nextVersion = (
    workspaceId: string,
    id: string,
    inc: { itemCount: number; nextSeq: number },
    when: Document = {},
  ) =>
    datasets.findOneAndUpdate(
      { ...when, _id: id, workspaceId },
      { $inc: { version: 1, ...inc }, $set: { updatedAt: new Date() } },
      { returnDocument: 'after' },
    );

  return {
    createDataset: async (doc) => void (await datasets.insertOne(doc)),
    getDataset: (workspaceId, id) => findById(datasets, id, { workspaceId }),
    pageDatasets: (workspaceId, brainId, q) =>
      page(datasets, { workspaceId, brainId }, { field: 'createdAt', dir: -1 }, q),
    updateDataset: (workspaceId, id, set) =>
      datasets.findOneAndUpdate(
        { _id: id, workspaceId },
        { $set: { ...set, updatedAt: new Date() } },
        { returnDocument: 'after' },
      ),
    async removeExperiment(workspaceId, id) {
      const gone = (await experiments.deleteOne({ _id: id, workspaceId })).deletedCount === 1;
      if (gone) await runs.deleteMany({ workspaceId, experimentId: id });
      return gone;
    },
    async removeDataset(workspaceId, id) {
      const gone = (await datasets.deleteOne({ _id: id, workspaceId })).deletedCount === 1;
      if (gone) await items.deleteMany({ workspaceId, datasetId: id });
      return gone;
    },
    /**
     * Not transactional (the store has no transactions): the version is taken first, then the
     * items are written with it. A crash between leaves a version without new items (readable,
     * equal to the one before) and an item count ahead of the rows, never an item in two versions.
     */
    async addItems(workspaceId, datasetId, add: NewItem[], max) {
      // The limit is part of the version's compare-and-set: concurrent additions never pass it together.
      const ds = await nextVersion(
        workspaceId,
        datasetId,
        { itemCount: add.length, nextSeq: add.length },
        { itemCount: { $lte: max - add.length } },
      );
      if (!ds) return (await findById(datasets, datasetId, { workspaceId })) ? 'full' : null;
      const now = new Date();
      const first = ds.nextSeq - add.length;
      const docs: DatasetItemDoc[] = add.map((it, i) => ({
        _id: randomUUID(),
        workspaceId,
        datasetId,
        seq: first + i,
        input: encodeBlob(it.input, 'input'),
        expected: it.expected === undefined ? null : encodeBlob(it.expected, 'expected'),
        metadata: it.metadata === undefined ? null : encodeBlob(it.metadata, 'metadata'),
        addedIn: ds.version,
        removedIn: null,
        sourceJobId: it.sourceJobId ?? null,
        createdAt: now,
      }));
      if (docs.length) await items.insertMany(docs);
      return { dataset: ds, items: docs.map(decodeItem) };
    },
    /**
     * The item is claimed first (one remover wins: its `removedIn` moves from null to PENDING_REMOVAL,
     * which every version still reads as live), then the dataset takes its version and the item is
     * marked removed in it: concurrent removals of one item count it once. A crash between the claim
     * and the version leaves the item live and not removable again (404), never the count wrong.
     */
    async removeItem(workspaceId, datasetId, itemId) {
      const ds = await findById(datasets, datasetId, { workspaceId });
      if (!ds) return null;
      const claimed = await items.updateOne(
        { _id: itemId, workspaceId, datasetId, removedIn: null },
        { $set: { removedIn: PENDING_REMOVAL } },
      );
      if (claimed.modifiedCount !== 1) return null;
      const next = await nextVersion(workspaceId, datasetId, { itemCount: -1, nextSeq: 0 });
      if (!next) return null;
      await items.updateOne(
        { _id: itemId, workspaceId, removedIn: PENDING_REMOVAL },
        { $set: { removedIn: next.version } },
      );
      return next;
    },
    async pageItems(workspaceId, datasetId, version, q): Promise<Page<DatasetItem>> {
      const p = await page(items, atVersion(workspaceId, datasetId, version), { field: 'seq', dir: 1 }, q);
      return { ...p, items: p.items.map(decodeItem) };
    },
    itemIdsAt: async (workspaceId, datasetId, version, max) =>
      (
        await items
          .find(atVersion(workspaceId, datasetId, version), { projection: { _id: 1 }, sort: { seq: 1 }, limit: max })
          .toArray()
      ).map((d) => d._id),
    countAt: (workspaceId, datasetId, version) => items.countDocuments(atVersion(workspaceId, datasetId, version)),
    getItem: async (workspaceId, itemId) => {
      const d = await findById(items, itemId, { workspaceId });
      return d && decodeItem(d);
    },
    getItems: async (workspaceId, ids) =>
      ids.length ? (await items.find({ workspaceId, _id: { $in: ids } }).toArray()).map(decodeItem) : [],

    createExperiment: async (e) => void (await experiments.insertOne(encodeExperiment(e))),
    getExperiment: async (workspaceId, id) => {
      const d = await findById(experiments, id, { workspaceId });
      return d && decodeExperiment(d);
    },
    async pageExperiments(workspaceId, filter, q: PageQuery): Promise<Page<Experiment>> {
      const p = await page(
        experiments,
        {
          workspaceId,
          ...(filter.brainId ? { brainId: filter.brainId } : {}),
          ...(filter.datasetId ? { datasetId: filter.datasetId } : {}),
        },
        { field: 'createdAt', dir: -1 },
        q,
      );
      return { ...p, items: p.items.map(decodeExperiment) };
    },
    setExperiment: async (workspaceId, id, set) =>
      (
        await experiments.updateOne(
          { _id: id, workspaceId, status: { $nin: [...EXPERIMENT_TERMINAL] } },
          { $set: { ...set, updatedAt: new Date() } },
        )
      ).matchedCount === 1,
    setAggregates: async (workspaceId, id, aggregates) =>
      void (await experiments.updateOne({ _id: id, workspaceId }, { $set: { aggregates, updatedAt: new Date() } })),

    async claimItem(row) {
      if (await claim(runs, encodeRun(row))) return row;
      const stored = await findById(runs, row._id, { workspaceId: row.workspaceId });
      if (!stored) throw new Error(`experiment item ${row._id} could not be claimed`);
      return decodeRun(stored);
    },
    finishItem: async (workspaceId, id, { output, ...set }) =>
      void (await runs.updateOne(
        { _id: id, workspaceId, status: 'running' },
        { $set: { ...set, output: encodeOutput(output) } },
      )),
    async pageExperimentItems(workspaceId, experimentId, q) {
      const p = await page(runs, { workspaceId, experimentId }, { field: 'seq', dir: 1 }, q);
      return { ...p, items: p.items.map(decodeRun) };
    },
    experimentItems: async (workspaceId, experimentId) =>
      (await runs.find({ workspaceId, experimentId }, { sort: { seq: 1 } }).toArray()).map(decodeRun),
  };
}
