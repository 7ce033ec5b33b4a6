import { describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { Artifact } from '../../src/knowledge/index.js';
import { Attachment, ChunkAck, LiveHistory, LiveSession, Meeting, MeetingList } from '../../src/meetings/index.js';
import {
  PrewarmResult,
  TranscriptionResult,
  TranscriptionRuntime,
  VocabularyDefaults,
} from '../../src/meetings/voice-schemas.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';
import { speak, wordErrorRate } from '../support/speech.js';
import { dataOf, readSse } from '../support/sse.js';

const { app } = usePlatform();
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const SENTENCES = [
  'the quarterly budget meeting starts on monday',
  'please review the marketing report before the meeting',
];
const KEY_WORDS = ['quarterly', 'budget', 'monday', 'marketing', 'report'];
/** Half a second of linear16 per chunk. */
const CHUNK = 16_000;

const meeting = async (ws: Ws, title = 'Budget sync') =>
  Meeting.parse((await app.post('/v1/meetings', ws.key, { title }, ws.brainHeaders)).body);
const b64 = (b: Buffer) => b.toString('base64');
function chunksOf(pcm: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let k = 0; k < pcm.length; k += CHUNK) out.push(pcm.subarray(k, k + CHUNK));
  return out;
}
async function upload(ws: Ws, file: { name: string; type: string; data: Buffer }) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(file.data)], { type: file.type }), file.name);
  const res = await fetch(`${app.url}/v1/chat/attachments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.key}`, ...ws.brainHeaders },
    body: form,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('meetings', () => {
  it('creates, lists, reads and patches a meeting: each change a version and a resource event; another workspace sees nothing', async () => {
    const ws = await buildWorkspace(app);
    const m = await meeting(ws);
    expect(m).toMatchObject({
      title: 'Budget sync',
      version: 1,
      transcription: { status: 'idle' },
      brain_id: ws.brainId,
    });
    const list = MeetingList.parse((await app.get('/v1/meetings', ws.key, ws.brainHeaders)).body);
    expect(list.meetings.map((x) => x.id)).toEqual([m.id]);
    const patched = await app.post(
      `/v1/resources/meeting/${m.id}/patch`,
      ws.key,
      { summary: 'Budget approved', decisions: ['ship in May'], body: { agenda: ['budget', 'hiring'] } },
      ws.brainHeaders,
    );
    expect(patched.status, patched.text).toBe(200);
    const after = Meeting.parse((patched.body as { meeting: unknown }).meeting);
    expect(after.version).toBe(2);
    expect(after.body).toMatchObject({
      summary: 'Budget approved',
      decisions: ['ship in May'],
      agenda: ['budget', 'hiring'],
    });
    // A stale base_version is a 409; a wrong type a 400 naming the field; an unknown kind a 400.
    expect(
      (await app.post(`/v1/resources/meeting/${m.id}/patch`, ws.key, { base_version: 1, notes: 'x' })).status,
    ).toBe(409);
    const bad = await app.post(`/v1/resources/meeting/${m.id}/patch`, ws.key, {
      transcript_segments: [{ text: 'no speaker' }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await app.post(`/v1/resources/pathway/${m.id}/patch`, ws.key, { notes: 'x' })).status).toBe(400);
    expect((await app.post('/v1/meetings', ws.key, { description: 'no title' }, ws.brainHeaders)).status).toBe(400);
    const events = await readSse(`${app.url}/v1/resource-events/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      until: (e) => e.length >= 2,
      timeoutMs: 5000,
    });
    expect(events.events.map((e) => dataOf(e).action)).toEqual(['created', 'updated']);
    expect(dataOf(events.events[1]).resource).toMatchObject({
      kind: 'meeting',
      id: m.id,
      version: 2,
      fields: expect.arrayContaining(['summary', 'decisions', 'agenda']),
    });
    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/meetings/${m.id}`, other.key)).status).toBe(404);
    expect((await app.post(`/v1/resources/meeting/${m.id}/patch`, other.key, { notes: 'x' })).status).toBe(404);
    expect(MeetingList.parse((await app.get('/v1/meetings', other.key)).body).total).toBe(0);
    expect((await app.post(`/v1/meetings/${m.id}/transcription/live/start`, other.key, {})).status).toBe(404);
  });

  it("the body's text parts take text or a list: lists are stored as lists, text parts as text", async () => {
    const ws = await buildWorkspace(app);
    const created = await app.post(
      '/v1/meetings',
      ws.key,
      {
        title: 'Planning',
        body: {
          agenda: '1. Budget\n\n  2. Hiring  \n',
          notes: ['first point', 'second point'],
          decisions: 'ship in May',
          action_items: ['send the deck', { text: 'book the room', owner: 'Ana' }],
          room: 'B2',
        },
      },
      ws.brainHeaders,
    );
    expect(created.status, created.text).toBe(201);
    const m = Meeting.parse(created.body);
    expect(m.body).toEqual({
      agenda: ['1. Budget', '2. Hiring'],
      notes: 'first point\nsecond point',
      decisions: ['ship in May'],
      action_items: [{ text: 'send the deck' }, { text: 'book the room', owner: 'Ana' }],
      room: 'B2',
    });
    // A list still works, and the read shows what was stored.
    const listed = await app.post(
      '/v1/meetings',
      ws.key,
      { title: 'Listed', body: { agenda: ['a', 'b'] } },
      ws.brainHeaders,
    );
    expect(Meeting.parse(listed.body).body).toEqual({ agenda: ['a', 'b'] });
    expect(Meeting.parse((await app.get(`/v1/meetings/${m.id}`, ws.key)).body).body).toMatchObject({
      agenda: ['1. Budget', '2. Hiring'],
    });
    // The patch takes the same forms, at the top level or under body.
    const patched = await app.post(
      `/v1/resources/meeting/${m.id}/patch`,
      ws.key,
      { summary: ['Budget agreed.', 'Hiring paused.'], body: { agenda: 'Only budget' }, action_items: 'a\nb' },
      ws.brainHeaders,
    );
    expect(patched.status, patched.text).toBe(200);
    expect(Meeting.parse((patched.body as { meeting: unknown }).meeting).body).toMatchObject({
      summary: 'Budget agreed.\nHiring paused.',
      agenda: ['Only budget'],
      action_items: [{ text: 'a' }, { text: 'b' }],
    });
    // Anything else is still a 400 naming the field.
    const bad = await app.post('/v1/meetings', ws.key, { title: 'x', body: { agenda: 42 } }, ws.brainHeaders);
    expect(bad.status).toBe(400);
    expect(String(bad.body.message)).toContain('agenda');
  });

  it('live transcription: chunks out of order with a duplicate and a gap; captions resume from a cursor; stop saves the transcript', async () => {
    const ws = await buildWorkspace(app);
    const m = await meeting(ws);
    const started = await app.post(
      `/v1/meetings/${m.id}/transcription/live/start`,
      ws.key,
      { locale: 'en-US' },
      ws.brainHeaders,
    );
    expect(started.status, started.text).toBe(201);
    const s = LiveSession.parse(started.body);
    expect((await app.post(`/v1/meetings/${m.id}/transcription/live/start`, ws.key, {})).status).toBe(409);
    const pcm = Buffer.concat(SENTENCES.map((t) => speak(t)));
    const chunks = chunksOf(pcm);
    const send = (seq: number) =>
      app.post(`/v1/meetings/${m.id}/transcription/chunk`, ws.key, {
        job_id: s.job_id,
        seq,
        chunk_base64: b64(chunks[seq]),
      });
    // Order sent: 0, 1, 3, 2, then 2 again, and the rest with seq 5 held back until the end.
    const order = [0, 1, 3, 2, 2, 4, ...chunks.map((_, k) => k).slice(6), 5];
    const acks = [];
    for (const seq of order) {
      const r = await send(seq);
      expect(r.status, r.text).toBe(200);
      acks.push(ChunkAck.parse(r.body));
    }
    expect(acks[2]).toMatchObject({ accepted: true, gap: true, missing_seqs: [2], next_expected_seq: 2 });
    expect(acks[3]).toMatchObject({ accepted: true, gap: false, next_expected_seq: 4 });
    expect(acks[4]).toMatchObject({ accepted: false, duplicate: true });
    expect(acks.at(-2)!.missing_seqs).toEqual([5]);
    expect(acks.at(-1)).toMatchObject({ gap: false, next_expected_seq: chunks.length });
    // Malformed and oversized chunks, an unknown job.
    const chunkUrl = `/v1/meetings/${m.id}/transcription/chunk`;
    expect((await app.post(chunkUrl, ws.key, { job_id: s.job_id, seq: 99, chunk_base64: 'not base64!' })).status).toBe(
      400,
    );
    expect(
      (await app.post(chunkUrl, ws.key, { job_id: s.job_id, seq: 99, chunk_base64: b64(Buffer.from([1, 2, 3])) }))
        .status,
    ).toBe(400);
    expect(
      (
        await app.post(chunkUrl, ws.key, {
          job_id: s.job_id,
          seq: 99,
          chunk_base64: b64(Buffer.alloc(app.config.TRANSCRIPTION_CHUNK_MAX_BYTES + 2)),
        })
      ).status,
    ).toBe(400);
    expect((await app.post(chunkUrl, ws.key, { job_id: s.job_id, seq: -1, chunk_base64: 'AAAA' })).status).toBe(400);
    expect(
      (await app.post(chunkUrl, ws.key, { job_id: crypto.randomUUID(), seq: 0, chunk_base64: 'AAAA' })).status,
    ).toBe(404);

    // Captions: read until a final one, then resume after the first event and get the rest.
    const headers = { authorization: `Bearer ${ws.key}` };
    const eventsUrl = `${app.url}/v1/meetings/${m.id}/transcription/live/events/${s.session_id}`;
    const first = await readSse(eventsUrl, {
      headers,
      until: (e) => e.some((x) => dataOf(x).type === 'final'),
      timeoutMs: 60_000,
    });
    expect(first.events.some((x) => dataOf(x).type === 'final')).toBe(true);
    const resumed = await readSse(`${eventsUrl}?after=${first.events[0].id}`, {
      headers,
      until: (e) => e.length >= first.events.length - 1,
      timeoutMs: 10_000,
    });
    expect(resumed.events.map((e) => e.id)).toEqual(first.events.slice(1).map((e) => e.id));

    const stop = await app.post(`/v1/meetings/${m.id}/transcription/live/stop`, ws.key, {});
    expect(stop.status, stop.text).toBe(202);
    expect(LiveSession.parse(stop.body).status).toMatch(/finalizing|ready/);
    expect((await send(0)).body).toMatchObject({ duplicate: true });
    expect(
      (await app.post(chunkUrl, ws.key, { job_id: s.job_id, seq: chunks.length, chunk_base64: b64(Buffer.alloc(320)) }))
        .status,
    ).toBe(409);
    const job = await settleJob(app, ws.key, s.job_id, 120_000);
    expect(job.status, JSON.stringify(job)).toBe('completed');
    const result = TranscriptionResult.parse(job.result);
    const wer = wordErrorRate(SENTENCES.join(' '), result.text);
    console.log(
      `[meetings] live final transcript: "${result.text}" (WER ${(wer * 100).toFixed(1)}%, pocketsphinx, flite voice rms)`,
    );
    for (const w of KEY_WORDS) expect(result.text).toContain(w);
    expect(wer).toBeLessThan(0.35);
    const after = Meeting.parse((await app.get(`/v1/meetings/${m.id}`, ws.key)).body);
    expect(after.transcription).toMatchObject({ status: 'ready', session_id: s.session_id, job_id: s.job_id });
    expect(after.transcription.finalized_at).toBeTruthy();
    expect((after.body.transcript_segments as unknown[]).length).toBeGreaterThan(0);
    const artifactId = after.transcription.artifact_id!;
    const art = Artifact.parse(
      (await app.get(`/v1/meetings/${m.id}/transcription/artifacts/${artifactId}`, ws.key)).body,
    );
    expect(art.content).toContain('budget');
    expect(art.metadata).toMatchObject({ meeting_id: m.id, session_id: s.session_id, missing_seqs: [] });
    expect((await app.get(`/v1/meetings/${m.id}/transcription/artifacts/${crypto.randomUUID()}`, ws.key)).status).toBe(
      404,
    );
    const history = LiveHistory.parse((await app.get(`/v1/meetings/${m.id}/transcription/live/history`, ws.key)).body);
    expect(history.sessions[0]).toMatchObject({
      session_id: s.session_id,
      status: 'ready',
      chunk_count: chunks.length,
      artifact_id: artifactId,
    });
    expect(history.captions.length).toBeGreaterThan(0);
    // The "meeting finalized" event carries the transcription state.
    const feed = await readSse(`${app.url}/v1/resource-events/stream`, {
      headers,
      until: (e) =>
        e.some((x) => (dataOf(x).resource as { transcription?: { status: string } }).transcription?.status === 'ready'),
      timeoutMs: 5000,
    });
    const ready = feed.events
      .map((e) => dataOf(e))
      .find((e) => (e.resource as { transcription?: { status: string } }).transcription?.status === 'ready')!;
    expect(ready.resource).toMatchObject({
      kind: 'meeting',
      id: m.id,
      transcription: { status: 'ready', artifact_id: artifactId, session_id: s.session_id },
      fields: expect.arrayContaining(['transcript_segments', 'transcription']),
    });
    const other = await buildWorkspace(app);
    expect((await app.get(`/v1/meetings/${m.id}/transcription/artifacts/${artifactId}`, other.key)).status).toBe(404);
    expect((await app.get(`/v1/meetings/${m.id}/transcription/live/history`, other.key)).status).toBe(404);
  }, 240_000);

  it('batch: a staged WAV attachment is transcribed by a job; non-audio is refused; another workspace cannot use it', async () => {
    const ws = await buildWorkspace(app);
    const wav = speak(SENTENCES[1], { format: 'wav' });
    const up = await upload(ws, { name: 'note.wav', type: 'audio/wav', data: wav });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const att = Attachment.parse(up.body);
    expect(att).toMatchObject({ content_type: 'audio/wav', size: wav.length });
    expect((await upload(ws, { name: 'x.txt', type: 'text/plain', data: Buffer.from('hello there') })).status).toBe(
      415,
    );
    const started = await app.post('/v1/transcribe', ws.key, {
      source: { type: 'attachment_id', id: att.id },
      locale: 'en-US',
      diarize: false,
    });
    expect(started.status, started.text).toBe(202);
    const job = Job.parse((await app.get(`/v1/jobs/${String(started.body.job_id)}/status`, ws.key)).body);
    expect(job.kind ?? 'transcription').toBe('transcription');
    const done = await settleJob(app, ws.key, String(started.body.job_id), 120_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const result = TranscriptionResult.parse(done.result);
    const wer = wordErrorRate(SENTENCES[1], result.text);
    console.log(`[meetings] batch transcript: "${result.text}" (WER ${(wer * 100).toFixed(1)}%)`);
    for (const w of ['review', 'marketing', 'report']) expect(result.text).toContain(w);
    expect(
      (await app.post('/v1/transcribe', ws.key, { source: { type: 'attachment_id', id: crypto.randomUUID() } })).status,
    ).toBe(404);
    expect((await app.post('/v1/transcribe', ws.key, { source: { type: 'file', id: att.id } })).status).toBe(400);
    expect((await app.post('/v1/transcribe', ws.key, { source: { type: 'attachment_id', id: 'nope' } })).status).toBe(
      400,
    );
    const other = await buildWorkspace(app);
    expect(
      (await app.post('/v1/transcribe', other.key, { source: { type: 'attachment_id', id: att.id } })).status,
    ).toBe(404);
  }, 180_000);

  it('runtime and vocabulary: the offline provider is reported; prewarm checks the credential', async () => {
    const ws = await buildWorkspace(app);
    const rt = TranscriptionRuntime.parse((await app.get('/v1/transcription/runtime', ws.key)).body);
    expect(rt).toMatchObject({ available: true, gladia_configured: false, provider: 'pocketsphinx', hints: 'none' });
    const d = VocabularyDefaults.parse(
      (await app.get('/v1/voice/stt-vocabulary/defaults?vertical_id=sales', ws.key)).body,
    );
    expect(d.vertical_id).toBe('sales');
    expect(d.merged_static).toEqual([...d.core, ...d.vertical]);
    expect((await app.get('/v1/voice/stt-vocabulary/defaults?vertical_id=astrology', ws.key)).status).toBe(400);
    const p = await app.post('/v1/voice/stt-vocabulary/prewarm', ws.key, {
      workspace_id: ws.workspaceId,
      brain_id: ws.brainId,
      vertical_id: 'sales',
      terms: ['Quokka', 'quokka', 'Rottnest'],
    });
    expect(p.status, p.text).toBe(200);
    const pw = PrewarmResult.parse(p.body);
    expect(pw.counts.brain).toBe(2);
    expect(pw.term_count).toBe(d.merged_static.length + 2);
    expect(await app.services.vocabulary.hintsFor(ws.workspaceId, ws.brainId)).toContain('Rottnest');
    const other = await buildWorkspace(app);
    expect(
      (await app.post('/v1/voice/stt-vocabulary/prewarm', ws.key, { workspace_id: other.workspaceId })).status,
    ).toBe(403);
    expect(
      (
        await app.post('/v1/voice/stt-vocabulary/prewarm', ws.key, {
          workspace_id: ws.workspaceId,
          brain_id: other.brainId,
        })
      ).status,
    ).toBe(404);
    expect((await app.post('/v1/voice/stt-vocabulary/prewarm', ws.key, { brain_id: ws.brainId })).status).toBe(400);
  });
});
