import { randomUUID } from 'node:crypto';
import type { Meeting, MeetingListFilter, TranscriptionStatus } from './model.js';
import type { MeetingStore } from './store.js';
import type { WorkspaceRepo, ResourceEvents, ResourceRef } from '../platform/index.js';
import { conflict, notFound, validationError } from '../kernel/errors.js';
import type { MeetingBody, MeetingPatchBody } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import { own, setOwn } from '../kernel/own.js';

/** Body keys of the patch envelope that are not body fields. */
const ENVELOPE = new Set(['base_version', 'title', 'description', 'body']);
const RETRIES = 8;

/** Whether two JSON values are the same (compared as their JSON text, key order included). */
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The transcription state of a body (idle when never transcribed). */
export const transcriptionOf = (
  body: Record<string, unknown>,
): { status: TranscriptionStatus } & Record<string, unknown> => {
  const t = body.transcription as { status?: TranscriptionStatus } | undefined;
  return { ...(t ?? {}), status: t?.status ?? 'idle' };
};

/** What the meeting service is built from (and its context: it keeps no state of its own). */
interface MeetingContext {
  repo: MeetingStore;
  workspaces: WorkspaceRepo;
  events: ResourceEvents;
}

const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;
const bodyOf = (m: Meeting) => m.body;
const ref = (m: Meeting, extra: Partial<ResourceRef> = {}): ResourceRef => ({
  kind: 'meeting',
  id: m._id,
  brain_id: m.brainId,
  name: m.title,
  version: m.version,
  ...extra,
});

async function get({ repo }: MeetingContext, scope: Scope, id: string): Promise<Meeting> {
  const m = await repo.meeting(scope.workspaceId, id);
  if (!m || (scope.brainId && m.brainId !== scope.brainId)) throw notFound('Meeting');
  return m;
}

/**
 * Applies a change to the newest version: `change` gets the current head and returns the new
 * title, description and body (or null: nothing changed). Retried on a concurrent write.
 */
async function update(
  { repo, events }: MeetingContext,
  workspaceId: string,
  id: string,
  change: (
    m: Meeting,
  ) => { title: string; description: string; body: Record<string, unknown>; changes: string[] } | null,
  o: { baseVersion?: number; by: string | null },
) {
  for (let attempt = 0; attempt < RETRIES; attempt++) {
    const cur = await repo.meeting(workspaceId, id);
    if (!cur) throw notFound('Meeting');
    if (o.baseVersion !== undefined && o.baseVersion !== cur.version)
      throw conflict(`base_version ${o.baseVersion} is not the current version ${cur.version}`);
    const next = change(cur);
    if (!next) return { doc: cur, changed: false };
    const doc = await repo.recordVersion(
      cur,
      {
        title: next.title,
        description: next.description,
        body: next.body,
        transcriptionStatus: transcriptionOf(next.body).status,
      },
      { changes: next.changes, by: o.by, at: new Date() },
    );
    if (!doc) continue;
    const t =
      next.changes.includes('transcription') || next.changes.includes('transcript_segments')
        ? transcriptionOf(next.body)
        : null;
    await events.emit(
      workspaceId,
      'updated',
      ref(doc, {
        fields: next.changes,
        ...(t
          ? {
              transcription: {
                status: t.status,
                finalized_at: (t.finalized_at as string | null | undefined) ?? null,
                session_id: t.session_id as string | undefined,
                job_id: t.job_id as string | undefined,
                artifact_id: t.artifact_id as string | undefined,
                segment_count: Array.isArray(next.body.transcript_segments) ? next.body.transcript_segments.length : 0,
              },
            }
          : {}),
      }),
    );
    return { doc, changed: true };
  }
  throw conflict('the meeting changed concurrently too often; retry');
}

/** Merges body fields (each one sent replaces that field); returns the changed field names. */
function merge(body: Record<string, unknown>, fields: Record<string, unknown>) {
  const next = { ...body };
  const changes: string[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || sameJson(v, own(body, k))) continue;
    setOwn(next, k, v);
    changes.push(k);
  }
  return { next, changes };
}

/** Reading meetings: one, a page, unscoped by the platform, a transcript as text. */
function createMeetingReads(ctx: MeetingContext) {
  const { repo } = ctx;
  return {
    get: (scope: Scope, id: string) => get(ctx, scope, id),
    bodyOf,
    async list(
      scope: Scope,
      q: {
        limit: number;
        offset: number;
        cursor?: string;
        brain_id?: string;
        transcription_status?: TranscriptionStatus;
      },
    ) {
      const filter: MeetingListFilter = { workspaceId: scope.workspaceId };
      const brain = q.brain_id ?? scope.brainId;
      if (brain) filter.brainId = brain;
      if (q.transcription_status) filter.transcriptionStatus = q.transcription_status;
      return repo.page(filter, q);
    },

    findUnscoped: (workspaceId: string, id: string) => repo.meeting(workspaceId, id),

    /** A meeting's transcript as text (`Speaker: text` lines) and when it was finalized: what stakeholder extraction reads. */
    async transcript(workspaceId: string, id: string) {
      const m = await repo.meeting(workspaceId, id);
      if (!m) return null;
      const body = m.body;
      const segments = Array.isArray(body.transcript_segments)
        ? (body.transcript_segments as { speaker?: unknown; text?: unknown }[])
        : [];
      const text = segments
        .map(
          (x) =>
            `${typeof x.speaker === 'string' && x.speaker ? `${x.speaker}: ` : ''}${typeof x.text === 'string' ? x.text : ''}`,
        )
        .join('\n');
      const t = body.transcription as { finalized_at?: unknown } | undefined;
      const finalizedAt = typeof t?.finalized_at === 'string' ? new Date(t.finalized_at) : null;
      return { brainId: m.brainId, title: m.title, text, finalizedAt };
    },
  };
}

/** Writing meetings: create, the central patch, the platform's body patch. */
function createMeetingWrites(ctx: MeetingContext) {
  const { repo } = ctx;
  return {
    async create(
      scope: Scope,
      b: { title: string; description?: string; body?: MeetingBody; brain_id?: string },
    ): Promise<Meeting> {
      const brainId = b.brain_id ?? scope.brainId;
      if (!brainId) throw validationError('brain_id: required (or send X-Brain-Id)');
      if (!(await ctx.workspaces.findBrain(scope.workspaceId, brainId))) throw notFound('Brain');
      const now = new Date();
      const body = (b.body ?? {}) as Record<string, unknown>;
      const doc: Meeting = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        title: b.title,
        description: b.description ?? '',
        body,
        transcriptionStatus: transcriptionOf(body).status,
        version: 1,
        createdBy: by(scope),
        createdAt: now,
        updatedAt: now,
      };
      await repo.create(doc);
      await ctx.events.emit(scope.workspaceId, 'created', ref(doc));
      return doc;
    },

    /** The central patch for kind meeting: title, description and body fields (top level or under `body`). */
    async patch(scope: Scope, id: string, p: MeetingPatchBody): Promise<Meeting> {
      await get(ctx, scope, id);
      const fields: Record<string, unknown> = { ...(p.body ?? {}) };
      for (const [k, v] of Object.entries(p)) if (!ENVELOPE.has(k) && v !== undefined) setOwn(fields, k, v);
      const { doc } = await update(
        ctx,
        scope.workspaceId,
        id,
        (cur) => {
          const { next, changes } = merge(bodyOf(cur), fields);
          const title = p.title ?? cur.title;
          const description = p.description ?? cur.description;
          if (title !== cur.title) changes.push('title');
          if (description !== cur.description) changes.push('description');
          return changes.length ? { title, description, body: next, changes } : null;
        },
        { baseVersion: p.base_version, by: by(scope) },
      );
      return doc;
    },

    /** Patches body fields from the platform itself (live transcription): unscoped by brain, by workspace id. */
    async patchBody(workspaceId: string, id: string, fields: Record<string, unknown>) {
      return update(
        ctx,
        workspaceId,
        id,
        (cur) => {
          const { next, changes } = merge(bodyOf(cur), fields);
          return changes.length ? { title: cur.title, description: cur.description, body: next, changes } : null;
        },
        { by: null },
      );
    },
  };
}

/**
 * Meetings (docs/meetings.md, "Meetings"): a title, a description and a structured body
 * (agenda, notes, summary, decisions, action items, transcript segments, transcription state).
 * Every change is a new version (optimistic on `version`, so concurrent patches never lose
 * each other's fields) and an event on the resource stream; an update that changes the
 * transcription state carries it (`resource.transcription`), so followers see "meeting
 * finalized" (status ready) without reading the meeting again.
 */
export function createMeetingService(d: { repo: MeetingStore; workspaces: WorkspaceRepo; events: ResourceEvents }) {
  const ctx: MeetingContext = { repo: d.repo, workspaces: d.workspaces, events: d.events };
  return {
    ...createMeetingReads(ctx), // get, bodyOf, list, findUnscoped, transcript
    ...createMeetingWrites(ctx), // create, patch, patchBody
  };
}
export type MeetingService = ReturnType<typeof createMeetingService>;
