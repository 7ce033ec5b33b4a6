import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/kernel/config.js';
import { createWinkEmbedder } from '../../src/embeddings/index.js';
import { loadWinkVectors } from '../../src/embeddings/wink.js';

// The provisioned cache (scripts/provision.sh converts the package once per machine).
const cacheDir = loadConfig(process.env).EMBEDDINGS_CACHE_DIR;

describe('offline word vectors', () => {
  it("reads a rare word's row from the file the same as a frequent one from memory", async () => {
    const wv = await loadWinkVectors(cacheDir);
    expect(wv.size).toBeGreaterThan(300_000);
    // Rows past the resident part are read from the file; twice (cache miss, then hit) gives the same values.
    const rare = wv.size - 1;
    const a = new Float32Array(wv.dimension);
    wv.addRow(rare, 1, a);
    const b = new Float32Array(wv.dimension);
    wv.addRow(rare, 1, b);
    expect([...a]).toEqual([...b]);
    expect(a.some((x) => x !== 0)).toBe(true);
    // A row is weighted: 2 × row = row + row.
    const twice = new Float32Array(wv.dimension);
    wv.addRow(rare, 2, twice);
    expect([...twice]).toEqual([...a].map((x) => x * 2));
    expect(wv.index.get(wv.index.word(rare))).toBeLessThanOrEqual(rare);
  });

  it('embeds a text of rare words to a unit vector that depends on them', async () => {
    const emb = createWinkEmbedder(cacheDir);
    const wv = await loadWinkVectors(cacheDir);
    const rareWords = [200_000, 250_000, 300_000].map((r) => wv.index.word(r));
    const { vectors } = await emb.embed([rareWords.join(' '), rareWords.slice(0, 2).join(' ')]);
    const norm = Math.hypot(...vectors[0]);
    expect(norm).toBeCloseTo(1, 5);
    expect([...vectors[0]]).not.toEqual([...vectors[1]]);
  });
});
