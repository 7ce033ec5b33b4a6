import { spawn } from 'node:child_process';
import { validationError } from '../kernel/errors.js';
import { own } from '../kernel/own.js';

/** The one audio format the platform transcribes: 16 kHz, mono, signed 16-bit little-endian PCM (linear16). */
const SAMPLE_RATE = 16_000;
export const BYTES_PER_MS = (SAMPLE_RATE * 2) / 1000;

/** Milliseconds of linear16 audio in `bytes`. */
export const msOf = (bytes: number): number => Math.round(bytes / BYTES_PER_MS);

/** A RIFF/WAVE container around linear16 PCM (what pocketsphinx, Gladia and OpenAI-compatible servers read). */
export function wavOf(pcm: Buffer): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + pcm.length, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(SAMPLE_RATE, 24);
  h.writeUInt32LE(SAMPLE_RATE * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([h, pcm]);
}

/** The PCM of a WAV that is already 16 kHz mono 16-bit; null when it is anything else (then sox converts it). */
export function pcmOfWav(wav: Buffer): Buffer | null {
  if (wav.length < 12 || wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE') return null;
  let off = 12;
  let fmtOk = false;
  while (off + 8 <= wav.length) {
    const id = wav.toString('ascii', off, off + 4);
    const size = wav.readUInt32LE(off + 4);
    if (id === 'fmt ') {
      fmtOk =
        wav.readUInt16LE(off + 8) === 1 &&
        wav.readUInt16LE(off + 10) === 1 &&
        wav.readUInt32LE(off + 12) === SAMPLE_RATE &&
        wav.readUInt16LE(off + 22) === 16;
    } else if (id === 'data') {
      return fmtOk ? wav.subarray(off + 8, Math.min(wav.length, off + 8 + size)) : null;
    }
    off += 8 + size + (size % 2);
  }
  return null;
}

/** Audio container types a staged attachment may have; sox converts them (mp3 when the system's sox has that format). */
export const AUDIO_TYPES: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/ogg': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/aiff': 'aiff',
  'audio/x-aiff': 'aiff',
};

/**
 * Any audio sox reads → linear16 16 kHz mono (sox is the maintained tool for this; it runs as a
 * child process with the body on stdin). A body sox cannot read is the caller's 400.
 */
export function toLinear16(body: Buffer, type: string, soxBin: string): Promise<Buffer> {
  const fmt = own(AUDIO_TYPES, type);
  if (!fmt) return Promise.reject(validationError(`unsupported audio type ${type}`));
  if (fmt === 'wav') {
    const pcm = pcmOfWav(body);
    if (pcm) return Promise.resolve(pcm);
  }
  return new Promise((resolve, reject) => {
    const p = spawn(
      soxBin,
      [
        '-t',
        fmt,
        '-',
        '-t',
        'raw',
        '-r',
        String(SAMPLE_RATE),
        '-c',
        '1',
        '-b',
        '16',
        '-e',
        'signed-integer',
        '-L',
        '-',
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const out: Buffer[] = [];
    let err = '';
    p.stdout.on('data', (b: Buffer) => out.push(b));
    p.stderr.on('data', (b: Buffer) => {
      err += b.toString();
    });
    p.on('error', (e) => reject(new Error(`sox could not run (${soxBin}): ${e.message}`)));
    p.on('close', (code) =>
      code === 0
        ? resolve(Buffer.concat(out))
        : reject(
            validationError(
              `the audio could not be decoded as ${fmt}: ${err.trim().split('\n').pop() ?? `sox exited ${code}`}`,
            ),
          ),
    );
    p.stdin.on('error', () => undefined);
    p.stdin.end(body);
  });
}
