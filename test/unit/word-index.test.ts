import { describe, expect, it } from 'vitest';
import { WordIndex } from '../../src/embeddings/word-index.js';

describe('WordIndex', () => {
  it('finds each word at its row, after a header line, with no trailing newline', () => {
    const idx = WordIndex.build(Buffer.from('100\nthe\nof\nand\ncafé'), 4);
    expect(idx.size).toBe(4);
    expect(['the', 'of', 'and', 'café'].map((w) => idx.get(w))).toEqual([0, 1, 2, 3]);
    expect(idx.word(3)).toBe('café');
    expect(idx.get('th')).toBeUndefined();
    expect(idx.get('thee')).toBeUndefined();
    expect(idx.get('')).toBeUndefined();
  });

  it('keeps the first row of a repeated word, as a Map filled in order would', () => {
    const idx = WordIndex.build(Buffer.from('a\nb\na\nc\n'));
    expect(idx.size).toBe(4);
    expect(idx.get('a')).toBe(0);
    expect(idx.word(2)).toBe('a');
    expect(idx.get('c')).toBe(3);
  });

  it('agrees with a Map on many words whose hashes collide in a small table', () => {
    const words = Array.from({ length: 5000 }, (_, i) => `w${(i * 7919) % 6007}x${i % 13}`);
    const idx = WordIndex.build(Buffer.from(words.join('\n')));
    const map = new Map<string, number>();
    words.forEach((w, i) => {
      if (!map.has(w)) map.set(w, i);
    });
    for (const [w, row] of map) expect(idx.get(w)).toBe(row);
    for (let i = 0; i < 200; i++) expect(idx.get(`absent${i}`)).toBeUndefined();
  });
});
