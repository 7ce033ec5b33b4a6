import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createGunzip, createGzip } from 'node:zlib';
import { Readable } from 'node:stream';
// eslint-disable-next-line no-restricted-imports -- a workspace export is Extended JSON: the driver's BSON codec writes and reads it, no store call
import { BSON } from 'mongodb';
import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import type { BlobStore } from '../blobs/store.js';
import { fromBuffer } from '../blobs/store.js';
import type { Config } from '../kernel/config.js';
import {
  AppError,
  authRequired,
  conflict,
  notFound,
  payloadTooLarge,
  unavailable,
  validationError,
} from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { Redis } from '../kernel/redis.js';
import type { Streams } from '../kernel/streams.js';
import { WORKSPACE_DELETED } from '../search/index.js';
import { BLOB_FOLDERS, SEARCHABLE } from './inventory.js';
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  ERASE_STEPS,
  RETENTION_KINDS,
  type DeletionDoc,
  type EraseStep,
  type RetentionKind,
  type RetentionWindows,
} from './model.js';
import type { Removed, TenancyStore } from './store.js';
import { workspaceDigest } from './model.js';

/** Usage ledger rows are kept at least this long: the usage reconciler replays 48 h and stores closed hours as rollups. */
const USAGE_ROWS_MIN_S = 72 * 3600;
/** The retention sweep's Temporal Schedule. */
const RETENTION_SCHEDULE_ID = 'retention-sweep';

export interface TenancyDeps {
  store: TenancyStore;
  redis: Redis;
  streams: Streams;
  blobs: BlobStore;
  temporal: Client;
  config: Config;
  log: Logger;
  /** Every workspace id (the retention sweep walks them). */
  workspaceIds: () => Promise<string[]>;
  /** Registers a workspace's receptor schedules in Temporal (an import brings them back at once). */
  registerSchedules: (workspaceId: string) => Promise<{ checked: number }>;
}

/** Retention, storage report, workspace deletion, export and import (docs/operations.md). */
export function createTenancyService(d: TenancyDeps) {
  return {
    ...createRetention(d), // windows, saveWindows, applyRetention, sweep, ensureSchedule, storage, checkOperator
    ...createWorkspaceErase(d), // startDeletion, deletion, eraseStep, failDeletion
    ...createArchive(d), // exportArchive, importArchive
  };
}

/** Retention windows and the sweep that applies them, the storage report, the operator's token. */
function createRetention(d: TenancyDeps) {
  const { store, config: c } = d;

  const defaults = (): RetentionWindows => ({
    jobs: c.RETENTION_JOBS_S,
    traces: c.RETENTION_TRACES_S,
    interventions: c.RETENTION_INTERVENTIONS_S,
    webhook_deliveries: c.RETENTION_WEBHOOK_DELIVERIES_S,
    transcripts: c.RETENTION_TRANSCRIPTS_S,
    usage_rows: c.RETENTION_USAGE_ROWS_S,
  });

  async function windows(ws: string): Promise<{ effective: RetentionWindows; own: Partial<RetentionWindows> }> {
    const doc = await store.settings(ws);
    const effective = defaults();
    const own: Partial<RetentionWindows> = {};
    for (const k of RETENTION_KINDS) {
      const v = doc?.windows[k];
      if (typeof v === 'number') effective[k] = own[k] = v;
    }
    return { effective, own };
  }

  return {
    windows,
    async saveWindows(ws: string, set: Partial<Record<RetentionKind, number | null>>) {
      const cur = (await store.settings(ws))?.windows ?? {};
      const next = { ...cur, ...set };
      if (typeof next.usage_rows === 'number' && next.usage_rows > 0 && next.usage_rows < USAGE_ROWS_MIN_S)
        throw validationError(`usage_rows: at least ${USAGE_ROWS_MIN_S} seconds (or 0 to keep forever)`);
      await store.saveSettings(ws, next);
      return windows(ws);
    },

    /**
     * Applies a workspace's windows, one bounded batch per kind per call; `more` is true while a
     * kind had a full batch. Usage rows go only past the reconciler's horizon: their hours are in
     * the rollups (usage_rollups, usage_cumulative), which are kept, so past totals still add up.
     */
    async applyRetention(ws: string, now = new Date()): Promise<{ deleted: Record<string, number>; more: boolean }> {
      const { effective } = await windows(ws);
      const deleted: Record<string, number> = {};
      let more = false;
      for (const kind of RETENTION_KINDS) {
        let s = effective[kind];
        if (!s) continue;
        if (kind === 'usage_rows') s = Math.max(s, USAGE_ROWS_MIN_S);
        const r = await store.expire(ws, kind, new Date(now.getTime() - s * 1000), c.RETENTION_BATCH);
        await dropCopies(d, ws, r);
        for (const [k, v] of Object.entries(r.rows)) deleted[k] = (deleted[k] ?? 0) + v;
        const main = r.rows[kind === 'traces' ? 'traces' : kindCollection[kind]] ?? 0;
        if (main >= c.RETENTION_BATCH) more = true;
      }
      return { deleted, more };
    },

    /** One sweep over every workspace (the `retention-sweep` schedule), batch after batch until each is done. */
    async sweep(now = new Date()): Promise<{ workspaces: number; deleted: number }> {
      let total = 0;
      const ids = await d.workspaceIds();
      for (const ws of ids) {
        try {
          for (let i = 0; i < 1000; i++) {
            const r = await this.applyRetention(ws, now);
            total += Object.values(r.deleted).reduce((a, b) => a + b, 0);
            if (!r.more) break;
          }
        } catch (e) {
          d.log.warn({ workspaceId: ws, err: (e as Error).message }, 'retention failed for a workspace; it runs again');
        }
      }
      return { workspaces: ids.length, deleted: total };
    },

    async ensureSchedule(): Promise<void> {
      try {
        await d.temporal.schedule.create({
          scheduleId: RETENTION_SCHEDULE_ID,
          spec: { intervals: [{ every: c.RETENTION_EVERY_S * 1000 }] },
          action: {
            type: 'startWorkflow',
            workflowType: 'retentionSweep',
            taskQueue: c.TEMPORAL_TASK_QUEUE,
            workflowId: RETENTION_SCHEDULE_ID,
            args: [],
          },
          policies: { overlap: 'SKIP', catchupWindow: 60_000 },
          state: { note: 'retention windows (docs/operations.md, Retention)' },
        });
      } catch (e) {
        if (!(e instanceof ScheduleAlreadyRunning)) throw e;
      }
    },

    /** What the workspace stores: rows and bytes per collection, blob bytes. */
    async storage(ws: string) {
      const u = await store.usage(ws);
      const rows = Object.values(u.collections).reduce((a, b) => a + b.rows, 0);
      const bytes = Object.values(u.collections).reduce((a, b) => a + b.bytes, 0);
      return { workspace_id: ws, rows, store_bytes: bytes, blob_bytes: u.blobBytes, collections: u.collections };
    },

    /** The platform operator's token, compared in constant time; anything else is 401. */
    checkOperator(token: string | null): void {
      const want = c.OPERATOR_TOKEN;
      if (!want || !token) throw authRequired('Operator token required');
      const a = createHash('sha256').update(token).digest();
      const b = createHash('sha256').update(want).digest();
      if (!timingSafeEqual(a, b)) throw authRequired('Operator token required');
    },
  };
}

/** Workspace deletion (a Temporal workflow, workflows/tenancy/workspace-erase.ts): started, read, one step at a time. */
function createWorkspaceErase(d: TenancyDeps) {
  const { store, config: c } = d;
  const prefix = c.REDIS_PREFIX;
  return {
    async startDeletion(ws: string): Promise<DeletionDoc> {
      if (!(await store.workspaceExists(ws))) throw notFound('Workspace');
      const now = new Date();
      const doc: DeletionDoc = {
        _id: randomUUID(),
        workspaceDigest: workspaceDigest(ws),
        status: 'running',
        progress: 0,
        currentStep: ERASE_STEPS[0],
        deleted: {},
        error: null,
        startedAt: now,
        updatedAt: now,
        finishedAt: null,
      };
      await store.deletions.create(doc);
      await d.temporal.workflow.start('workspaceErase', {
        taskQueue: c.TEMPORAL_TASK_QUEUE,
        workflowId: `workspace-erase-${doc._id}`,
        args: [{ deletionId: doc._id, workspaceId: ws }],
      });
      return doc;
    },
    async deletion(id: string): Promise<DeletionDoc> {
      const doc = await store.deletions.get(id);
      if (!doc) throw notFound('Workspace deletion');
      return doc;
    },

    /** One bounded part of one step; `done` once the step has nothing left. Idempotent: a retried call redoes nothing twice. */
    async eraseStep(deletionId: string, ws: string, step: EraseStep): Promise<{ done: boolean }> {
      const i = ERASE_STEPS.indexOf(step);
      await store.deletions.update(deletionId, {
        currentStep: step,
        progress: Math.round((i * 100) / ERASE_STEPS.length),
      });
      let done = true;
      const add: Record<string, number> = {};
      switch (step) {
        case 'credentials': {
          // Keys first: nothing of the workspace can be called while the rest goes.
          // Their Redis keys too: the recently-valid mark (by digest) and the rate-limit counters (by key id).
          const keys = await store.apiKeys(ws);
          for (const k of keys) {
            await d.redis.del(`${prefix}auth:valid:key:${k.hash}`);
            for (const r of await scanKeys(d, k.id)) await d.redis.del(r);
          }
          if (keys.length) add.api_keys = keys.length;
          await eraseCollection(
            d,
            'api_keys',
            keys.map((k) => k.id),
          );
          // Share links likewise: their recently-valid marks (by token digest) and rate-limit counters (by id).
          const shares = await store.shareTokens(ws);
          for (const t of shares) {
            await d.redis.del(`${prefix}auth:valid:share:${t.hash}`);
            for (const r of await scanKeys(d, t.id)) await d.redis.del(r);
          }
          if (shares.length) add.share_tokens = shares.length;
          await eraseCollection(
            d,
            'share_tokens',
            shares.map((t) => t.id),
          );
          break;
        }
        case 'workflows': {
          // Receptor schedules, then every workflow the workspace has running (the WorkspaceId search attribute).
          for (const id of await store.ownedIds('receptors', ws, null, 10_000)) {
            await d.temporal.schedule
              .getHandle(`receptor-${id}`)
              .delete()
              .catch(() => undefined);
          }
          let n = 0;
          for await (const w of d.temporal.workflow.list({
            query: `WorkspaceId = "${ws}" AND ExecutionStatus = "Running"`,
          })) {
            await d.temporal.workflow
              .getHandle(w.workflowId, w.runId)
              .terminate('workspace deleted')
              .catch(() => undefined);
            n += 1;
          }
          if (n) add.workflows = n;
          break;
        }
        case 'store': {
          // Each batch's job, trace and transcript streams and named blobs go with its rows.
          const r = await store.eraseBatch(ws, c.RETENTION_BATCH);
          await dropCopies(d, ws, r);
          Object.assign(add, r.rows);
          done = Object.keys(r.rows).length === 0;
          break;
        }
        case 'search':
          // The rows are gone: every process's index (the embedded ones, Weaviate's syncer) drops the
          // workspace's entries (Weaviate: its tenant) when its feed follower reads this entry.
          await d.streams.feed.append(ws, {
            workspace_id: ws,
            action: WORKSPACE_DELETED,
            at: new Date().toISOString(),
          });
          add.search_index = 1;
          break;
        case 'redis': {
          // Every key naming the workspace (its usage counters, workspace and trace streams, the feed
          // mark the step before set, JWT rate limits and idempotency records name it too).
          const keys = await scanKeys(d, ws);
          for (const k of keys) await d.redis.del(k);
          add.redis_keys = keys.length;
          break;
        }
        case 'blobs': {
          // The workspace's blob folders whole: bodies no row named too (an upload cut short).
          let n = 0;
          for (const folder of BLOB_FOLDERS) n += await d.blobs.deletePrefix(`${folder}/${ws}/`);
          if (n) add.blobs = n;
          break;
        }
        case 'workspace': {
          await eraseCollection(d, 'workspaces', [ws]);
          await store.deletions.update(deletionId, {
            status: 'completed',
            progress: 100,
            currentStep: 'completed',
            finishedAt: new Date(),
          });
          break;
        }
      }
      if (Object.keys(add).length) await store.deletions.update(deletionId, {}, add);
      return { done };
    },
    async failDeletion(deletionId: string, reason: string) {
      await store.deletions.update(deletionId, { status: 'failed', error: reason, currentStep: 'failed' });
    },
  };
}

/** Export and import (docs/operations.md, "Workspace export and import"). */
function createArchive(d: TenancyDeps) {
  const { store, config: c } = d;
  return {
    /** The archive: gzip'd JSON lines (a header, every row in canonical Extended JSON, every blob in base64, a trailer). */
    exportArchive(ws: string): Readable {
      async function* lines() {
        yield (
          JSON.stringify({
            format: ARCHIVE_FORMAT,
            version: ARCHIVE_VERSION,
            workspace_id: ws,
            exported_at: new Date().toISOString(),
          }) + '\n'
        );
        const counts: Record<string, number> = {};
        const blobs: string[] = [];
        for await (const { collection, doc } of store.rowsOf(ws)) {
          counts[collection] = (counts[collection] ?? 0) + 1;
          if (typeof doc.blobKey === 'string') blobs.push(doc.blobKey);
          yield JSON.stringify({ collection, doc: BSON.EJSON.serialize(doc, { relaxed: false }) }) + '\n';
        }
        let blobCount = 0;
        for (const key of blobs) {
          const body = await d.blobs.read(key, c.ASSET_MAX_BYTES).catch(() => null);
          if (!body) continue;
          blobCount += 1;
          yield (
            JSON.stringify({
              blob: key,
              sha256: createHash('sha256').update(body).digest('hex'),
              data: body.toString('base64'),
            }) + '\n'
          );
        }
        yield JSON.stringify({ end: true, rows: counts, blobs: blobCount }) + '\n';
      }
      return Readable.from(lines()).pipe(createGzip());
    },

    /**
     * Imports an archive into this deployment; the workspace must not exist here. A refused import
     * is not half-done: what it wrote is erased before the error is answered.
     */
    async importArchive(
      body: Readable,
      declaredBytes: number | null = null,
    ): Promise<{ workspace_id: string; rows: Record<string, number>; blobs: number }> {
      // Bounded before anything is read: the body as sent (IMPORT_MAX_BYTES), each line once expanded.
      if (declaredBytes !== null && declaredBytes > c.IMPORT_MAX_BYTES)
        throw payloadTooLarge(`body: archives are limited to ${c.IMPORT_MAX_BYTES} bytes (IMPORT_MAX_BYTES)`);
      const state: { ws: string | null } = { ws: null };
      try {
        return await importLines(d, body, state);
      } catch (e) {
        if (state.ws) await eraseAll(d, state.ws);
        if (e instanceof AppError) throw e;
        if ((e as { code?: unknown }).code === 11000)
          throw conflict('The archive holds ids that exist in this deployment');
        throw validationError(`body: not a readable archive (${(e as Error).message})`);
      }
    },
  };
}

/** Deletes every Redis key of what a batch removed, and its blobs. */
async function dropCopies(d: TenancyDeps, ws: string, r: Removed): Promise<void> {
  const prefix = d.config.REDIS_PREFIX;
  const keys = [
    ...r.jobIds.flatMap((id) => [d.streams.keys.job(id), `${d.streams.keys.job(id)}:meta`, `${prefix}turn0:${id}`]),
    ...r.traceIds.flatMap((id) => [d.streams.keys.trace(ws, id), `${d.streams.keys.trace(ws, id)}:meta`]),
    ...r.sessionIds.flatMap((id) => [d.streams.keys.captions(ws, id), `${d.streams.keys.captions(ws, id)}:meta`]),
  ];
  // One key per call: on a Redis Cluster the keys live in different slots.
  for (const k of keys) await d.redis.del(k);
  for (const b of r.blobKeys) await d.blobs.delete(b);
}

/** Every key of this deployment's Redis whose name holds the text (every master on a cluster). */
async function scanKeys(d: TenancyDeps, needle: string): Promise<string[]> {
  const prefix = d.config.REDIS_PREFIX;
  const nodes = 'nodes' in d.redis ? d.redis.nodes('master') : [d.redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*${needle}*`, 'COUNT', 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
  }
  return found;
}

/** The search index's copy: a `deleted` (or `created`) feed entry for each searchable resource (docs/search.md). */
async function announce(d: TenancyDeps, ws: string, action: 'deleted' | 'created'): Promise<number> {
  const { store } = d;
  let n = 0;
  for (const s of SEARCHABLE) {
    let after: string | null = null;
    for (;;) {
      const ids = await store.ownedIds(s.collection, ws, after, 500);
      if (!ids.length) break;
      after = ids[ids.length - 1];
      for (const id of ids) {
        const kinds = typeof s.kind === 'string' ? [s.kind] : ['asset', 'artifact'];
        for (const kind of kinds)
          await d.streams.feed.append(ws, {
            workspace_id: ws,
            action: action === 'deleted' ? 'deleted' : 'updated',
            resource: { kind, id },
            at: new Date().toISOString(),
          });
        n += 1;
      }
    }
  }
  return n;
}

/** Every row and blob of a workspace, at once (an import that failed half-way). */
async function eraseAll(d: TenancyDeps, ws: string): Promise<void> {
  const { store, config: c } = d;
  for (let i = 0; i < 100_000; i++) {
    const r = await store.eraseBatch(ws, c.RETENTION_BATCH);
    for (const b of r.blobKeys) await d.blobs.delete(b).catch(() => undefined);
    if (!Object.keys(r.rows).length) break;
  }
  await store.deleteIds('workspaces', [ws]);
}

/** The import proper: rows and blobs stored as read; `state.ws` names the workspace once the header is read (the caller's undo). */
async function importLines(
  d: TenancyDeps,
  body: Readable,
  state: { ws: string | null },
): Promise<{ workspace_id: string; rows: Record<string, number>; blobs: number }> {
  const { store, config: c } = d;
  const rl = boundedLines(body, c.IMPORT_MAX_BYTES, lineCap(c));
  let ws: string | null = null;
  let ended = false;
  const rows: Record<string, number> = {};
  const pending = new Map<string, Record<string, unknown>[]>();
  let blobs = 0;
  const named = new Set<string>();
  const flush = async (name: string) => {
    const docs = pending.get(name) ?? [];
    pending.delete(name);
    await store.insertRows(name, docs);
  };
  for await (const line of rl) {
    if (!line.trim()) continue;
    const rec = JSON.parse(line) as Record<string, unknown>;
    if (!ws) {
      if (rec.format !== ARCHIVE_FORMAT || rec.version !== ARCHIVE_VERSION || typeof rec.workspace_id !== 'string')
        throw validationError(`body: not a ${ARCHIVE_FORMAT} version ${ARCHIVE_VERSION}`);
      ws = rec.workspace_id;
      if (!/^[0-9a-f-]{36}$/.test(ws)) throw validationError('body: workspace_id is not a UUID');
      if (await store.workspaceExists(ws)) throw conflict('The workspace already exists in this deployment');
      state.ws = ws;
      continue;
    }
    if (typeof rec.collection === 'string') {
      const doc = BSON.EJSON.deserialize(rec.doc as Record<string, unknown>, { relaxed: false }) as Record<
        string,
        unknown
      >;
      const list = pending.get(rec.collection) ?? [];
      list.push(doc);
      if (typeof doc.blobKey === 'string') named.add(doc.blobKey);
      pending.set(rec.collection, list);
      rows[rec.collection] = (rows[rec.collection] ?? 0) + 1;
      if (list.length >= 500) await flush(rec.collection);
    } else if (typeof rec.blob === 'string' && typeof rec.data === 'string') {
      const data = Buffer.from(rec.data, 'base64');
      if (createHash('sha256').update(data).digest('hex') !== rec.sha256)
        throw validationError(`body: blob ${rec.blob} does not match its checksum`);
      if (!named.has(rec.blob)) throw validationError(`body: blob ${rec.blob} is named by no row of the archive`);
      await d.blobs.put(rec.blob, fromBuffer(data), { maxBytes: data.length + 1 });
      blobs += 1;
    } else if (rec.end === true) ended = true;
  }
  if (!ws || !ended) throw validationError('body: the archive is incomplete (no trailer)');
  for (const name of [...pending.keys()]) await flush(name);
  await announce(d, ws, 'created');
  // Its schedule receptors fire from now on, not from the next API start's reconcile.
  // Temporal out of reach: the import is undone (the caller's catch) and answered 503, to be retried.
  const s = await d.registerSchedules(ws).catch((e: unknown) => {
    throw unavailable(`registering the workspace's schedules failed (${(e as Error).message}); import again`, 5);
  });
  d.log.info({ workspaceId: ws, schedules: s.checked }, 'imported workspace: receptor schedules registered');
  return { workspace_id: ws, rows, blobs };
}

/** Deletes these rows of a collection (none: no call). */
async function eraseCollection({ store }: TenancyDeps, name: string, ids: string[]) {
  if (ids.length) await store.deleteIds(name, ids);
}

/** The longest line an archive may hold: a blob line (the largest body, base64) and its JSON around it. */
const lineCap = (c: Config) => Math.ceil((Math.max(c.ASSET_MAX_BYTES, c.ATTACHMENT_MAX_BYTES) * 4) / 3) + 65_536;

/**
 * An archive's lines, bounded: at most `maxBytes` of the body as sent (the gzip stream), at most
 * `maxLine` bytes in one expanded line; past either, a 413 (nothing more is read).
 */
async function* boundedLines(body: Readable, maxBytes: number, maxLine: number): AsyncGenerator<string> {
  const gunzip = createGunzip();
  // Reading stops (the request is not destroyed, so the 413 can still be answered; Node discards the rest).
  const stop = (err?: Error) => {
    body.unpipe(gunzip);
    body.pause();
    gunzip.destroy(err);
  };
  let sent = 0;
  body.on('data', (b: Buffer) => {
    sent += b.length;
    if (sent > maxBytes) stop(payloadTooLarge(`body: archives are limited to ${maxBytes} bytes (IMPORT_MAX_BYTES)`));
  });
  body.on('error', (e) => gunzip.destroy(e));
  body.pipe(gunzip);
  let parts: Buffer[] = [];
  let held = 0;
  for await (const chunk of gunzip as AsyncIterable<Buffer>) {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      parts.push(chunk.subarray(start, nl));
      yield Buffer.concat(parts).toString('utf8');
      parts = [];
      held = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      parts.push(chunk.subarray(start));
      held += chunk.length - start;
      if (held > maxLine) {
        stop();
        throw payloadTooLarge(`body: a line of the archive is longer than ${maxLine} bytes`);
      }
    }
  }
  if (held) yield Buffer.concat(parts).toString('utf8');
}

const kindCollection: Record<RetentionKind, string> = {
  jobs: 'jobs',
  traces: 'traces',
  interventions: 'interventions',
  webhook_deliveries: 'webhook_deliveries',
  transcripts: 'transcription_sessions',
  usage_rows: 'usage_ledger',
};
