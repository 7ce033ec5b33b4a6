import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveSession, Meeting } from '../../src/meetings/index.js';
import { TranscriptionResult } from '../../src/meetings/voice-schemas.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { speak, wordErrorRate } from '../support/speech.js';
import { spawnWorkerProcess } from '../support/worker.js';

let app: TestApp & { close(): Promise<void> };
const children: ChildProcess[] = [];
/** A real worker process on the app's queue and blob folder (killed with SIGKILL mid-session). */
async function spawnWorker(): Promise<ChildProcess> {
  const child = await spawnWorkerProcess(app, { DATA_DIR: app.config.DATA_DIR });
  children.push(child);
  return child;
}
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app?.close();
});

const SENTENCES = [
  'the quarterly budget meeting starts on monday',
  'please review the marketing report before the meeting',
];

describe('live transcription durability', () => {
  it('a worker killed mid-session loses no chunk: the next worker finalizes every stored chunk', async () => {
    const ws = await buildWorkspace(app);
    const m = Meeting.parse((await app.post('/v1/meetings', ws.key, { title: 'Restart' }, ws.brainHeaders)).body);
    const first = await spawnWorker();
    const s = LiveSession.parse((await app.post(`/v1/meetings/${m.id}/transcription/live/start`, ws.key, {})).body);
    const pcm = Buffer.concat(SENTENCES.map((t) => speak(t)));
    const chunks: Buffer[] = [];
    for (let k = 0; k < pcm.length; k += 16_000) chunks.push(pcm.subarray(k, k + 16_000));
    const send = async (seq: number) => {
      const r = await app.post(`/v1/meetings/${m.id}/transcription/chunk`, ws.key, {
        job_id: s.job_id,
        seq,
        chunk_base64: chunks[seq].toString('base64'),
      });
      expect(r.status, r.text).toBe(200);
    };
    const half = Math.floor(chunks.length / 2);
    for (let seq = 0; seq < half; seq++) await send(seq);
    first.kill('SIGKILL');
    // While no worker runs, the API keeps taking chunks (it stores them; signals wait in Temporal).
    for (let seq = half; seq < chunks.length; seq++) await send(seq);
    await spawnWorker();
    expect((await app.post(`/v1/meetings/${m.id}/transcription/live/stop`, ws.key, {})).status).toBe(202);
    const job = await settleJob(app, ws.key, s.job_id, 180_000);
    expect(job.status, JSON.stringify(job)).toBe('completed');
    const result = TranscriptionResult.parse(job.result);
    expect((job.result as { missing_seqs: number[] }).missing_seqs).toEqual([]);
    expect((job.result as { duration_ms: number }).duration_ms).toBe(Math.round(pcm.length / 32));
    const wer = wordErrorRate(SENTENCES.join(' '), result.text);
    console.log(`[restart] transcript after a worker kill: "${result.text}" (WER ${(wer * 100).toFixed(1)}%)`);
    for (const w of ['quarterly', 'monday', 'marketing', 'report']) expect(result.text).toContain(w);
    const after = Meeting.parse((await app.get(`/v1/meetings/${m.id}`, ws.key)).body);
    expect(after.transcription.status).toBe('ready');
  }, 300_000);
});
