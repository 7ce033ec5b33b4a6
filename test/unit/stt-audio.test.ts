import { describe, expect, it } from 'vitest';
import { msOf, pcmOfWav, wavOf } from '../../src/stt/audio.js';
import { parsePocketsphinx } from '../../src/stt/pocketsphinx.js';
import { transcriptMarkdown } from '../../src/meetings/index.js';

describe('speech helpers', () => {
  it('wraps linear16 in a WAV header and reads it back; other WAV formats are left to sox', () => {
    const pcm = Buffer.from(Array.from({ length: 640 }, (_, i) => i % 256));
    const wav = wavOf(pcm);
    expect(wav.length).toBe(44 + 640);
    expect(pcmOfWav(wav)!.equals(pcm)).toBe(true);
    const stereo = Buffer.from(wav);
    stereo.writeUInt16LE(2, 22);
    expect(pcmOfWav(stereo)).toBeNull();
    expect(pcmOfWav(Buffer.from('not a wav file at all'))).toBeNull();
    expect(msOf(32_000)).toBe(1000);
  });

  it('turns pocketsphinx word timings into segments, dropping fillers and pronunciation variants', () => {
    const out = [
      'hello the world',
      '<s> 0.000 0.050 0.99',
      'hello 0.060 0.400 0.9',
      '<sil> 0.410 0.500 0.9',
      'the(2) 0.510 0.600 0.8',
      'world 0.610 1.000 0.7',
      '</s> 1.010 1.100 1.0',
      'again',
      '<s> 2.000 2.050 1.0',
      '[NOISE] 2.060 2.100 1.0',
      'again 2.110 2.500 0.6',
      '</s> 2.510 2.600 1.0',
    ].join('\n');
    expect(parsePocketsphinx(out)).toEqual([
      { speaker: 'speaker_0', text: 'hello the world', start_ms: 60, end_ms: 1000 },
      { speaker: 'speaker_0', text: 'again', start_ms: 2110, end_ms: 2500 },
    ]);
  });

  it('writes a transcript artifact with times, speakers and the chunks that never came', () => {
    const md = transcriptMarkdown('Sync', [{ speaker: 'speaker_0', text: 'hi there', start_ms: 65_000 }], [3, 4]);
    expect(md).toContain('# Transcript: Sync');
    expect(md).toContain('[01:05] **speaker_0**: hi there');
    expect(md).toContain('Chunks never received: 3, 4');
  });
});
