/**
 * The meetings repository's operations (docs/architecture.md, "Storage boundary"): meetings with
 * decoded bodies and optimistic versions, transcription sessions, chunks, attachments and
 * vocabulary, each scoped by its workspace in the filter.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Meeting, TranscriptionSession } from '../../src/meetings/model.js';
import type { StoreBackend } from '../../src/compose/stores.js';
import { openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

const meetingOf = (workspaceId: string, o: Partial<Meeting> = {}): Meeting => {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'brain-1',
    title: 'Sync',
    description: '',
    body: { notes: 'a.b', nested: [[1, 2]], $odd: { 'x.y': null } },
    transcriptionStatus: 'idle',
    version: 1,
    createdBy: 'u1',
    createdAt: now,
    updatedAt: now,
    ...o,
  };
};

const sessionOf = (
  workspaceId: string,
  meetingId: string,
  o: Partial<TranscriptionSession> = {},
): TranscriptionSession => ({
  _id: randomUUID(),
  workspaceId,
  brainId: 'brain-1',
  meetingId,
  jobId: randomUUID(),
  locale: 'en',
  diarize: false,
  status: 'live',
  contiguous: 0,
  maxSeq: -1,
  chunkCount: 0,
  bytes: 0,
  captionSeq: 0,
  captionMs: 0,
  artifactId: randomUUID(),
  missing: [],
  error: null,
  createdBy: null,
  startedAt: new Date(),
  stoppedAt: null,
  finalizedAt: null,
  ...o,
});

describe.each([['ferretdb'], ['mongodb']] as [StoreBackend][])('meetings repository (%s form)', (backend) => {
  const skip = () => !h.backends.includes(backend);
  const repo = () => h.repos(backend).meetings;
  const ws = `ws-${backend}-${randomUUID().slice(0, 6)}`;
  const other = `other-${backend}-${randomUUID().slice(0, 6)}`;

  it('stores a meeting with its body as sent (encoded at rest) and reads it back decoded, only in its workspace', async () => {
    if (skip()) return;
    const m = meetingOf(ws);
    await repo().create(m);
    expect(await repo().meeting(ws, m._id)).toEqual(m);
    expect(await repo().meeting(other, m._id)).toBeNull();
    const stored = await h.db.collection('meetings').findOne({ _id: m._id as never });
    expect(typeof stored?.body).toBe('string');
    const v1 = await h.db.collection('meeting_versions').findOne({ _id: `${m._id}:1` as never });
    expect(v1).toMatchObject({ meetingId: m._id, workspaceId: ws, version: 1, changes: ['created'] });
  });

  it('records a version only from the version it read: one of two concurrent writers wins', async () => {
    if (skip()) return;
    const m = meetingOf(ws);
    await repo().create(m);
    const change = (notes: string) => ({
      title: m.title,
      description: m.description,
      body: { ...m.body, notes },
      transcriptionStatus: 'idle' as const,
    });
    const at = new Date();
    const [a, b] = await Promise.all([
      repo().recordVersion(m, change('first'), { changes: ['notes'], by: 'u1', at }),
      repo().recordVersion(m, change('second'), { changes: ['notes'], by: 'u2', at }),
    ]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    const won = (a ?? b)!;
    expect(won.version).toBe(2);
    expect(await repo().meeting(ws, m._id)).toEqual(won);
    expect(await h.db.collection('meeting_versions').countDocuments({ meetingId: m._id })).toBe(2);
    // Another workspace's view of the meeting changes nothing.
    expect(
      await repo().recordVersion({ ...won, workspaceId: other }, change('x'), { changes: [], by: null, at }),
    ).toBeNull();
  });

  it('refuses a body over the size limit before writing', async () => {
    if (skip()) return;
    const m = meetingOf(ws, { body: { notes: 'x'.repeat(8_000_001) } });
    await expect(repo().create(m)).rejects.toMatchObject({ status: 400 });
    expect(await repo().meeting(ws, m._id)).toBeNull();
  });

  it('pages the workspace meetings newest change first, filtered by brain and transcription state', async () => {
    if (skip()) return;
    const w = `page-${backend}-${randomUUID().slice(0, 6)}`;
    const t0 = Date.now();
    const ms = [0, 1, 2, 3].map((i) =>
      meetingOf(w, {
        brainId: i % 2 ? 'brain-b' : 'brain-a',
        transcriptionStatus: i === 3 ? 'ready' : 'idle',
        updatedAt: new Date(t0 + i * 1000),
      }),
    );
    for (const m of ms) await repo().create(m);
    await repo().create(meetingOf(other));
    const all = await repo().page({ workspaceId: w }, { limit: 3 });
    expect(all.items.map((m) => m._id)).toEqual([ms[3]._id, ms[2]._id, ms[1]._id]);
    expect(all.items[0].body).toEqual(ms[3].body);
    const next = await repo().page({ workspaceId: w }, { limit: 3, cursor: all.nextCursor! });
    expect(next.items.map((m) => m._id)).toEqual([ms[0]._id]);
    const b = await repo().page({ workspaceId: w, brainId: 'brain-b', transcriptionStatus: 'ready' }, { limit: 10 });
    expect(b.items.map((m) => m._id)).toEqual([ms[3]._id]);
  });

  it('keeps sessions per workspace: open, by job, latest, stop once, ready and failed', async () => {
    if (skip()) return;
    const meetingId = randomUUID();
    const old = sessionOf(ws, meetingId, { status: 'ready', startedAt: new Date(Date.now() - 60_000) });
    const s = sessionOf(ws, meetingId);
    await repo().startSession(old);
    await repo().startSession(s);
    expect(await repo().session(ws, s._id)).toEqual(s);
    expect(await repo().session(ws, s._id, 'another-meeting')).toBeNull();
    expect(await repo().session(other, s._id)).toBeNull();
    expect((await repo().openSession(ws, meetingId))?._id).toBe(s._id);
    expect((await repo().sessionOfJob(ws, meetingId, s.jobId))?._id).toBe(s._id);
    expect(await repo().sessionOfJob(other, meetingId, s.jobId)).toBeNull();
    expect((await repo().latestSession(ws, meetingId))?._id).toBe(s._id);
    expect((await repo().recentSessions(ws, meetingId, 5)).map((x) => x._id)).toEqual([s._id, old._id]);
    expect(await repo().stopSession({ _id: s._id, workspaceId: other }, new Date())).toBe(false);
    const stops = await Promise.all([repo().stopSession(s, new Date()), repo().stopSession(s, new Date())]);
    expect(stops.filter(Boolean)).toHaveLength(1);
    await repo().markSessionReady(s, { finalizedAt: new Date(), missing: [2] });
    expect(await repo().sessionOfArtifact(ws, meetingId, s.artifactId)).toMatchObject({
      status: 'ready',
      missing: [2],
    });
    await repo().markSessionFailed({ _id: old._id, workspaceId: other }, 'nope');
    expect((await repo().session(ws, old._id))?.error).toBeNull();
  });

  it('stores the first chunk of a seq, counts it, and reads seqs, sizes and rows in order', async () => {
    if (skip()) return;
    const s = sessionOf(ws, randomUUID());
    await repo().startSession(s);
    const row = (seq: number, blobKey = `k${seq}`) => ({
      sessionId: s._id,
      workspaceId: ws,
      seq,
      bytes: 100 + seq,
      blobKey,
      createdAt: new Date(),
    });
    const firsts = await Promise.all([repo().recordChunk(row(0, 'a')), repo().recordChunk(row(0, 'b'))]);
    expect(firsts.filter(Boolean)).toHaveLength(1);
    for (const seq of [2, 1, 4]) expect(await repo().recordChunk(row(seq))).toBe(true);
    for (const seq of [0, 2, 1, 4]) await repo().countChunk(s, seq, 100 + seq);
    expect(await repo().hasChunk(s, 2)).toBe(true);
    expect(await repo().hasChunk(s, 3)).toBe(false);
    expect(await repo().hasChunk({ _id: s._id, workspaceId: other }, 2)).toBe(false);
    expect(await repo().chunkSeqs(s, 1, 10)).toEqual([1, 2, 4]);
    expect((await repo().chunkSizes(s, 0, 4)).map((c) => [c.seq, c.bytes])).toEqual([
      [0, 100],
      [1, 101],
      [2, 102],
    ]);
    expect((await repo().chunksBetween(s, 1, 4)).map((c) => c.seq)).toEqual([1, 2, 4]);
    expect(await repo().chunksBetween({ _id: s._id, workspaceId: other }, 0, 9)).toEqual([]);
    await repo().advanceContiguous(s, 3);
    await repo().advanceContiguous(s, 1);
    expect(await repo().session(ws, s._id)).toMatchObject({ contiguous: 3, chunkCount: 4, bytes: 407, maxSeq: 4 });
  });

  it('claims a caption window once', async () => {
    if (skip()) return;
    const s = sessionOf(ws, randomUUID());
    await repo().startSession(s);
    const claims = await Promise.all([
      repo().claimCaptionWindow(s, 0, 3, 500),
      repo().claimCaptionWindow(s, 0, 3, 500),
    ]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await repo().claimCaptionWindow({ _id: s._id, workspaceId: other }, 4, 5, 900)).toBe(false);
    expect(await repo().session(ws, s._id)).toMatchObject({ captionSeq: 4, captionMs: 500 });
  });

  it('keeps attachments and vocabulary per workspace', async () => {
    if (skip()) return;
    const a = {
      _id: randomUUID(),
      workspaceId: ws,
      brainId: null,
      name: 'a.wav',
      contentType: 'audio/wav',
      size: 10,
      sha256: 'x',
      blobKey: 'attachments/x',
      createdBy: null,
      createdAt: new Date(),
    };
    await repo().recordAttachment(a);
    expect(await repo().attachment(ws, a._id)).toEqual(a);
    expect(await repo().attachment(other, a._id)).toBeNull();
    expect(await repo().savedTerms(ws, null)).toEqual([]);
    await repo().saveTerms(ws, null, ['Quokka']);
    await repo().saveTerms(ws, 'brain-1', ['Rottnest']);
    await repo().saveTerms(ws, null, ['Quokka', 'Wombat']);
    expect(await repo().savedTerms(ws, null)).toEqual(['Quokka', 'Wombat']);
    expect(await repo().savedTerms(ws, 'brain-1')).toEqual(['Rottnest']);
    expect(await repo().savedTerms(other, null)).toEqual([]);
  });

  it('reads meetings in bulk and walks them all for the search index (decoded)', async () => {
    if (skip()) return;
    const m = meetingOf(ws);
    await repo().create(m);
    expect((await repo().findMany([m._id, 'missing'])).map((x) => x.body)).toEqual([m.body]);
    let seen: Meeting | undefined;
    for await (const batch of repo().walk(2)) {
      expect(batch.length).toBeLessThanOrEqual(2);
      seen ??= batch.find((x) => x._id === m._id);
    }
    expect(seen).toEqual(m);
  });
});
