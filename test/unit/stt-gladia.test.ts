import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createGladia } from '../../src/stt/gladia.js';

/**
 * A loopback server following Gladia's documented v2 protocols (the real service cannot be
 * reached from here): it records what the adapter sends and answers as Gladia does, including
 * a pre-recorded job that is still `processing` on the first poll and a partial live transcript.
 */
interface Seen {
  method: string;
  path: string;
  key: string | undefined;
  type: string | undefined;
  body: Buffer;
}
let server: Server;
let wss: WebSocketServer;
let base = '';
const seen: Seen[] = [];
const frames: { binary: boolean; data: Buffer }[] = [];
let polls = 0;

const read = (req: IncomingMessage) =>
  new Promise<Buffer>((r) => {
    const p: Buffer[] = [];
    req.on('data', (c: Buffer) => p.push(c));
    req.on('end', () => r(Buffer.concat(p)));
  });

beforeAll(async () => {
  server = createServer((req, res) => {
    void read(req).then((body) => {
      const path = req.url ?? '';
      seen.push({
        method: req.method ?? '',
        path,
        key: req.headers['x-gladia-key'] as string | undefined,
        type: req.headers['content-type'],
        body,
      });
      const json = (status: number, v: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
      if (req.headers['x-gladia-key'] !== 'gk-test') return json(401, { message: 'bad key' });
      if (req.method === 'POST' && path === '/v2/upload')
        return json(200, { audio_url: `${base}/file/abc`, audio_metadata: { id: 'abc', filename: 'audio.wav' } });
      if (req.method === 'POST' && path === '/v2/pre-recorded')
        return json(201, { id: 'job-1', result_url: `${base}/v2/pre-recorded/job-1` });
      if (req.method === 'GET' && path === '/v2/pre-recorded/job-1') {
        polls++;
        if (polls === 1) return json(200, { id: 'job-1', status: 'processing' });
        return json(200, {
          id: 'job-1',
          status: 'done',
          result: {
            transcription: {
              full_transcript: 'hello quokka world',
              utterances: [
                { start: 0.1, end: 0.9, text: 'hello quokka', speaker: 0, channel: 0 },
                { start: 1.0, end: 1.5, text: 'world', speaker: 1, channel: 0 },
              ],
            },
          },
        });
      }
      if (req.method === 'POST' && path === '/v2/live')
        return json(201, { id: 'live-1', url: `${base.replace('http', 'ws')}/v2/live?token=tok-1` });
      return json(404, { message: 'unknown' });
    });
  });
  wss = new WebSocketServer({ server });
  wss.on('connection', (ws, req) => {
    expect(req.url).toBe('/v2/live?token=tok-1');
    ws.on('message', (data, isBinary) => {
      frames.push({ binary: isBinary, data: Buffer.from(data as Buffer) });
      if (!isBinary && JSON.parse(String(data)).type === 'stop_recording') {
        ws.send(
          JSON.stringify({
            type: 'transcript',
            session_id: 'live-1',
            data: { id: 'u0', is_final: false, utterance: { text: 'hel', start: 0, end: 0.3, channel: 0 } },
          }),
        );
        ws.send(
          JSON.stringify({
            type: 'transcript',
            session_id: 'live-1',
            data: { id: 'u1', is_final: true, utterance: { text: 'hello live', start: 0, end: 0.8, channel: 0 } },
          }),
        );
        ws.send(JSON.stringify({ type: 'end_session', session_id: 'live-1' }));
        ws.close(1000);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  wss.close();
  await new Promise<void>((r) => server.close(() => r()));
});

const pcm = Buffer.alloc(16_000 * 2, 1); // one second

describe('Gladia adapter (loopback server following the documented protocol)', () => {
  it('batch: upload → pre-recorded with language, diarization and custom vocabulary → polls until done', async () => {
    const g = createGladia({ apiKey: 'gk-test', baseUrl: base });
    const t = await g.transcribe(pcm, { locale: 'en-US', diarize: true, hints: ['quokka', 'Rottnest'] });
    expect(t.text).toBe('hello quokka world');
    expect(t.segments).toEqual([
      { speaker: 'speaker_0', text: 'hello quokka', start_ms: 100, end_ms: 900 },
      { speaker: 'speaker_1', text: 'world', start_ms: 1000, end_ms: 1500 },
    ]);
    const upload = seen.find((s) => s.path === '/v2/upload')!;
    expect(upload.key).toBe('gk-test');
    expect(upload.type).toMatch(/^multipart\/form-data; boundary=/);
    expect(upload.body.toString('latin1')).toMatch(/name="audio"; filename="audio.wav"/);
    expect(upload.body.includes(Buffer.from('RIFF'))).toBe(true);
    const job = JSON.parse(seen.find((s) => s.path === '/v2/pre-recorded')!.body.toString()) as Record<string, unknown>;
    expect(job).toEqual({
      audio_url: `${base}/file/abc`,
      language_config: { languages: ['en'], code_switching: false },
      diarization: true,
      custom_vocabulary: true,
      custom_vocabulary_config: { vocabulary: ['quokka', 'Rottnest'] },
    });
    expect(polls).toBe(2);
  });

  it('live: init with the audio format, binary frames, stop_recording; only final transcripts are kept', async () => {
    const g = createGladia({ apiKey: 'gk-test', baseUrl: base });
    const t = await g.transcribe(pcm, { locale: 'fr-FR', diarize: false, hints: [], live: true });
    expect(t.text).toBe('hello live');
    const init = JSON.parse(seen.find((s) => s.path === '/v2/live')!.body.toString()) as Record<string, unknown>;
    expect(init).toMatchObject({
      encoding: 'wav/pcm',
      bit_depth: 16,
      sample_rate: 16000,
      channels: 1,
      language_config: { languages: ['fr'] },
      messages_config: { receive_final_transcripts: true },
    });
    const audio = frames.filter((f) => f.binary);
    expect(Buffer.concat(audio.map((f) => f.data)).equals(pcm)).toBe(true);
    expect(audio.every((f) => f.data.length <= 3200)).toBe(true);
    expect(JSON.parse(frames.at(-1)!.data.toString())).toEqual({ type: 'stop_recording' });
  });

  it('reports itself unavailable without a key, and a refused key as an error', async () => {
    expect(await createGladia({ baseUrl: base }).check()).toEqual({
      available: false,
      reason: 'GLADIA_API_KEY is not set',
    });
    await expect(
      createGladia({ apiKey: 'wrong', baseUrl: base }).transcribe(pcm, { locale: 'en', diarize: false, hints: [] }),
    ).rejects.toThrow(/answered 401/);
  });
});
