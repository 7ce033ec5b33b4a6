import type { Db } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob, type Blob } from '../kernel/store/codec.js';
import type { PreparedRunData } from '../temporal/definitions.js';
import type { ToolCall } from '../llm/types.js';
import { claim } from '../kernel/store/claims.js';
import type { ModelStep, RunContextDoc, RunStepDoc, StoredStart, ToolStep } from './model.js';
import type { RunStore } from './store.js';

export const runIndexes: IndexSpec[] = [{ collection: 'run_steps', keys: { jobId: 1, turn: 1 }, name: 'job_turn' }];

const modelId = (jobId: string, turn: number, attempt: number) => `${jobId}:m:${turn}:${attempt}`;
const toolId = (jobId: string, turn: number, callId: string) => `${jobId}:t:${turn}:${callId}`;

/** How many runs' working sets one process keeps in memory (see `createRunRepo`): the runs in flight, and some. */
const REMEMBERED_RUNS = 1_000;

/**
 * What this process wrote or read of runs' working sets, by run: the context's blob and the model
 * steps' blobs by key. Every entry is a stored document's content, and a stored document is never
 * rewritten with other content: the context is stored once (a claim), and a model step's key names
 * its attempt, which one process runs. So a hit is what the store would answer, and a miss (another
 * process prepared the run, or this one forgot it) reads the store as before. Blobs, not decoded
 * values: each read decodes its own copy, so no caller can change what the next one gets.
 */
function workingSets() {
  const runs = new Map<string, { context?: Blob; models: Map<string, RunStepDoc> }>();
  const of = (jobId: string) => {
    let r = runs.get(jobId);
    if (!r) {
      if (runs.size >= REMEMBERED_RUNS) runs.delete(runs.keys().next().value!);
      r = { models: new Map() };
      runs.set(jobId, r);
    }
    return r;
  };
  return {
    context: (jobId: string) => runs.get(jobId)?.context,
    setContext: (jobId: string, blob: Blob) => {
      of(jobId).context = blob;
    },
    model: (jobId: string, id: string) => runs.get(jobId)?.models.get(id),
    setModel: (doc: RunStepDoc) => {
      of(doc.jobId).models.set(doc._id, doc);
    },
    forget: (jobId: string) => runs.delete(jobId),
  };
}

/**
 * The run store on MongoDB (and FerretDB): run contexts (`run_contexts`) and steps (`run_steps`),
 * with this process's working sets remembered in front of them.
 */
export function createRunRepo(db: Db): RunStore {
  const contexts = db.collection<RunContextDoc>('run_contexts');
  const steps = db.collection<RunStepDoc>('run_steps');
  const put = (doc: RunStepDoc) => steps.replaceOne({ _id: doc._id }, doc, { upsert: true });
  const remembered = workingSets();
  return {
    /** Stores the context once (a retried prepare finds it there); false when one was stored before. */
    async putContext(workspaceId: string, jobId: string, data: PreparedRunData, start?: StoredStart): Promise<boolean> {
      const blob = encodeBlob(data);
      const stored = await claim(contexts, {
        _id: jobId,
        workspaceId,
        data: blob,
        createdAt: new Date(),
        ...(start ? { start: encodeBlob(start) } : {}),
      });
      if (stored) remembered.setContext(jobId, blob);
      return stored;
    },
    /** Runs stored before `olderThan` whose workflow start no sweep has confirmed yet (a small set: runs in flight). */
    async unconfirmedStarts(
      olderThan: Date,
      limit = 200,
    ): Promise<{ jobId: string; workspaceId: string; start: StoredStart }[]> {
      const docs = await contexts
        .find({ start: { $exists: true }, createdAt: { $lt: olderThan } }, { projection: { data: 0 } })
        .limit(limit)
        .toArray();
      return docs.map((d) => ({
        jobId: d._id,
        workspaceId: d.workspaceId,
        start: decodeBlob<StoredStart>(d.start!, { workflowType: '', args: [] }),
      }));
    },
    /** Its workflow exists: the sweeps no longer look at this run. */
    async confirmStart(jobId: string): Promise<void> {
      await contexts.updateOne({ _id: jobId }, { $unset: { start: '' } });
    },
    /** The stored start of one run (null when none is kept, or it was confirmed). */
    async storedStart(jobId: string): Promise<StoredStart | null> {
      const doc = await contexts.findOne({ _id: jobId }, { projection: { start: 1 } });
      return doc?.start ? decodeBlob<StoredStart | null>(doc.start, null) : null;
    },
    async context(jobId: string): Promise<PreparedRunData | null> {
      const known = remembered.context(jobId);
      if (known) return decodeBlob<PreparedRunData | null>(known, null);
      const doc = await contexts.findOne({ _id: jobId });
      if (doc) remembered.setContext(jobId, doc.data);
      return doc ? decodeBlob<PreparedRunData | null>(doc.data, null) : null;
    },
    async putModel(jobId: string, s: ModelStep): Promise<void> {
      const doc: RunStepDoc = {
        _id: modelId(jobId, s.turn, s.attempt),
        jobId,
        kind: 'model',
        turn: s.turn,
        attempt: s.attempt,
        callId: null,
        name: null,
        text: encodeBlob(s.text),
        toolCalls: encodeBlob(s.toolCalls),
        createdAt: new Date(),
      };
      await put(doc);
      remembered.setModel(doc);
    },
    async putTool(jobId: string, s: ToolStep): Promise<void> {
      await put({
        _id: toolId(jobId, s.turn, s.callId),
        jobId,
        kind: 'tool',
        turn: s.turn,
        attempt: null,
        callId: s.callId,
        name: s.name,
        text: encodeBlob(s.content),
        toolCalls: null,
        createdAt: new Date(),
      });
    },
    /** The accepted attempt of each turn (in order) and every tool result. */
    async steps(jobId: string, accepted: number[]): Promise<{ models: ModelStep[]; tools: ToolStep[] }> {
      // By key: each accepted attempt's model step, then the result of each tool call it made.
      const modelDocs = await Promise.all(
        accepted.map((attempt, turn) => {
          const id = modelId(jobId, turn, attempt);
          return remembered.model(jobId, id) ?? steps.findOne({ _id: id });
        }),
      );
      const models: ModelStep[] = [];
      modelDocs.forEach((d, turn) => {
        if (d)
          models.push({
            turn,
            attempt: accepted[turn],
            text: decodeBlob(d.text, ''),
            toolCalls: decodeBlob<ToolCall[]>(d.toolCalls, []),
          });
      });
      const toolDocs = await Promise.all(
        models.flatMap((m) => m.toolCalls.map((c) => steps.findOne({ _id: toolId(jobId, m.turn, c.id) }))),
      );
      const tools = toolDocs
        .filter((d): d is NonNullable<typeof d> => d !== null)
        .map((d) => ({ turn: d.turn, callId: d.callId ?? '', name: d.name ?? '', content: decodeBlob(d.text, '') }));
      return { models, tools };
    },
    /** Drops a finished run's working set (the engram and the job keep what lasts). */
    async drop(jobId: string): Promise<void> {
      remembered.forget(jobId);
      await Promise.all([contexts.deleteOne({ _id: jobId }), steps.deleteMany({ jobId })]);
    },
  };
}
