import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Speech made on this machine for the transcription tests: CMU flite (voice `rms`, Debian's
 * flite package) speaks the sentence, sox converts it to what the platform transcribes. flite
 * rather than espeak-ng: pocketsphinx's acoustic model recognises espeak-ng's formant voice
 * badly (docs/decisions.md has both word error rates).
 */
export function speak(
  text: string,
  opts: { voice?: string; format?: 'raw' | 'wav'; engine?: 'flite' | 'espeak-ng' } = {},
): Buffer {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cortex-speech-'));
  try {
    const src = path.join(dir, 'src.wav');
    if (opts.engine === 'espeak-ng') execFileSync('espeak-ng', ['-v', 'en-us', '-s', '140', '-w', src, text]);
    else execFileSync('flite', ['-voice', opts.voice ?? 'rms', '-t', text, '-o', src]);
    const out = path.join(dir, `out.${opts.format ?? 'raw'}`);
    execFileSync('sox', [
      src,
      '-r',
      '16000',
      '-c',
      '1',
      '-b',
      '16',
      '-e',
      'signed-integer',
      ...(opts.format === 'wav' ? [] : ['-L', '-t', 'raw']),
      out,
    ]);
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const words = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);

/** Word error rate: word-level edit distance (substitutions, insertions, deletions) over the reference's word count. */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const r = words(reference);
  const h = words(hypothesis);
  let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
  for (let i = 1; i <= r.length; i++) {
    const cur = [i];
    for (let j = 1; j <= h.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r[i - 1] === h[j - 1] ? 0 : 1));
    prev = cur;
  }
  return r.length ? prev[h.length] / r.length : 0;
}
