import { spawn } from 'node:child_process';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { wavOf } from './audio.js';
import type { Segment, SpeechToText } from './speech.js';

/** Decoder processes at once per process (each is one CPU core for about half the audio's duration). */
const MAX_PARALLEL = 2;
let running = 0;
const queue: (() => void)[] = [];
async function slot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_PARALLEL) await new Promise<void>((r) => queue.push(r));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    queue.shift()?.();
  }
}

/** Fillers pocketsphinx marks in its word timings; `word(2)` names a pronunciation variant. */
const FILLER = /^(<s>|<\/s>|<sil>|\[.*\]|\+\+.*\+\+)$/i;

/**
 * Parses `pocketsphinx_continuous -time yes` output: per utterance a hypothesis line, then one
 * `word start end confidence` line per word (seconds). Utterances become segments.
 */
export function parsePocketsphinx(out: string): Segment[] {
  const segments: Segment[] = [];
  let words: { w: string; s: number; e: number }[] = [];
  const flush = () => {
    const spoken = words.filter((x) => !FILLER.test(x.w));
    if (spoken.length) {
      segments.push({
        speaker: 'speaker_0',
        text: spoken.map((x) => x.w.replace(/\(\d+\)$/, '')).join(' '),
        start_ms: Math.round(spoken[0].s * 1000),
        end_ms: Math.round(spoken[spoken.length - 1].e * 1000),
      });
    }
    words = [];
  };
  for (const line of out.split('\n')) {
    const m = /^(\S+) (\d+\.\d+) (\d+\.\d+) (-?\d+(?:\.\d+)?)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === '<s>') flush();
    words.push({ w: m[1], s: Number(m[2]), e: Number(m[3]) });
    if (m[1] === '</s>') flush();
  }
  flush();
  return segments;
}

/**
 * The offline default: CMU pocketsphinx with Debian's US English model (pocketsphinx-en-us),
 * run as a child process (`pocketsphinx_continuous`): Debian ships no Node binding, and a
 * process per call keeps a crash of the decoder away from the worker. Vocabulary hints are a
 * documented no-op: its keyword-spotting mode would replace the language model rather than bias it.
 */
export function createPocketsphinx(o: { bin: string; modelDir: string }): SpeechToText {
  const model = {
    hmm: path.join(o.modelDir, 'en-us'),
    lm: path.join(o.modelDir, 'en-us.lm.bin'),
    dict: path.join(o.modelDir, 'cmudict-en-us.dict'),
  };
  const run = (wavPath: string) =>
    new Promise<string>((resolve, reject) => {
      const p = spawn(
        o.bin,
        [
          '-infile',
          wavPath,
          '-hmm',
          model.hmm,
          '-lm',
          model.lm,
          '-dict',
          model.dict,
          '-time',
          'yes',
          '-logfn',
          '/dev/null',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      p.stdout.on('data', (b: Buffer) => {
        out += b.toString();
      });
      p.stderr.on('data', (b: Buffer) => {
        err += b.toString();
      });
      p.on('error', (e) => reject(new Error(`pocketsphinx could not run (${o.bin}): ${e.message}`)));
      p.on('close', (code) =>
        code === 0 ? resolve(out) : reject(new Error(`pocketsphinx exited ${code}: ${err.trim().slice(-300)}`)),
      );
    });
  return {
    name: 'pocketsphinx',
    hints: 'none',
    async check() {
      if (!(await canSpawn(o.bin)))
        return {
          available: false,
          reason: `${o.bin} not found: install Debian's pocketsphinx and pocketsphinx-en-us (scripts/provision.sh does)`,
        };
      for (const f of [model.hmm, model.lm, model.dict]) {
        if (
          !(await access(f).then(
            () => true,
            () => false,
          ))
        )
          return { available: false, reason: `pocketsphinx model file ${f} missing: install pocketsphinx-en-us` };
      }
      return { available: true };
    },
    async transcribe(pcm) {
      if (pcm.length < 320) return { text: '', segments: [] };
      const dir = await mkdtemp(path.join(os.tmpdir(), 'cortex-stt-'));
      try {
        const file = path.join(dir, 'audio.wav');
        await writeFile(file, wavOf(pcm));
        const segments = parsePocketsphinx(await slot(() => run(file)));
        return { text: segments.map((s) => s.text).join(' '), segments };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Whether a program can be started (ENOENT otherwise); it is stopped at once. */
function canSpawn(bin: string): Promise<boolean> {
  return new Promise((resolve) => {
    const p = spawn(bin, [], { stdio: 'ignore' });
    p.on('error', () => resolve(false));
    p.on('spawn', () => {
      p.kill('SIGKILL');
      resolve(true);
    });
  });
}
