import { describe, expect, it } from 'vitest';
import { createMemoryIndex, fuseRrf, tokenize, type IndexEntry } from '../../src/search/memory-index.js';

/** A seeded generator, so a failure reproduces. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}
const VOCAB = Array.from({ length: 300 }, (_, i) => `w${i}`);

function corpus(n: number, dim: number, seed = 7) {
  const r = rng(seed);
  const word = () => VOCAB[Math.floor(VOCAB.length * r() ** 2)];
  return Array.from({ length: n }, (_, i): IndexEntry => {
    const v = Float32Array.from({ length: dim }, () => r() - 0.5);
    const norm = Math.hypot(...v);
    for (let d = 0; d < dim; d++) v[d] /= norm;
    return {
      id: `e${i}`,
      workspaceId: 'w',
      brainId: 'b',
      type: i % 3 ? 'assets' : 'artifacts',
      resourceId: `r${Math.floor(i / 2)}`,
      title: Array.from({ length: 3 }, word).join(' '),
      description: '',
      text: Array.from({ length: 5 + Math.floor(r() * 40) }, word).join(' '),
      path: '',
      url: '',
      displayPath: `e${i}`,
      updatedAt: 0,
      vector: v,
      vectorModel: 'm',
    };
  });
}

/** BM25 computed the slow, obvious way over the same documents (title counted twice). */
function bm25Reference(docs: IndexEntry[], query: string[]) {
  const toks = docs.map((d) => [
    ...tokenize(d.title),
    ...tokenize(d.title),
    ...tokenize(d.description),
    ...tokenize(d.text),
  ]);
  const avgdl = toks.reduce((a, t) => a + t.length, 0) / docs.length;
  const dfs = new Map([...new Set(query)].map((q) => [q, toks.filter((t) => t.includes(q)).length]));
  return docs
    .map((d, i) => {
      let s = 0;
      for (const q of new Set(query)) {
        const df = dfs.get(q)!;
        if (!df) continue;
        const tf = toks[i].filter((t) => t === q).length;
        if (!tf) continue;
        const idf = Math.log(1 + (docs.length - df + 0.5) / (df + 0.5));
        s += idf * ((tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * toks[i].length) / avgdl)));
      }
      return { id: d.id, s };
    })
    .filter((x) => x.s > 0)
    .sort((a, b) => b.s - a.s || (a.id < b.id ? -1 : 1));
}

describe('embedded search index', () => {
  const docs = corpus(2000, 16);
  const index = createMemoryIndex();
  for (const d of docs)
    index.replaceResource(
      'w',
      d.resourceId,
      docs.filter((x) => x.resourceId === d.resourceId),
    );

  it('BM25 scores and order equal a brute-force reference', () => {
    for (const q of [['w1'], ['w3', 'w40'], ['w2', 'w250', 'w7'], ['nothing']]) {
      const ref = bm25Reference(docs, q).slice(0, 20);
      const got = index.lexical('w', q, () => true, 20);
      expect(got.map((h) => h.entry.id)).toEqual(ref.map((r) => r.id));
      got.forEach((h, i) => expect(h.score).toBeCloseTo(ref[i].s, 9));
    }
  });

  it('exact vector search equals sorting every similarity, with filters', () => {
    const q = docs[5].vector!;
    const ref = docs
      .filter((d) => d.type === 'assets')
      .map((d) => ({ id: d.id, s: d.vector!.reduce((a, x, i) => a + x * q[i], 0) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10);
    const got = index.vector('w', q, 'm', (e) => e.type === 'assets', 10);
    expect(got.map((h) => h.entry.id)).toEqual(ref.map((r) => r.id));
    expect(index.vector('w', q, 'other-model', () => true, 10)).toEqual([]);
  });

  it('a selective filter (too few among the library candidates) still gets the exact filtered top k', () => {
    const q = docs[9].vector!;
    const keep = (id: string) => Number(id.slice(1)) % 97 === 0;
    const ref = docs
      .filter((d) => keep(d.id))
      .map((d) => ({ id: d.id, s: d.vector!.reduce((a, x, i) => a + x * q[i], 0) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10);
    const got = index.vector('w', q, 'm', (e) => keep(e.id), 10);
    expect(got.map((h) => h.entry.id)).toEqual(ref.map((r) => r.id));
    got.forEach((h, i) => expect(h.score).toBeCloseTo(ref[i].s, 5));
  });

  it('a removed or replaced vector is never returned; freed rows are reused', () => {
    const idx = createMemoryIndex();
    const unit = (a: number, b: number) => {
      const n = Math.hypot(a, b);
      return Float32Array.from([a / n, b / n]);
    };
    const e = (id: string, v: Float32Array): IndexEntry => ({
      id,
      workspaceId: 'a',
      brainId: null,
      type: 'assets',
      resourceId: id,
      title: '',
      description: '',
      text: id,
      path: '',
      url: '',
      displayPath: id,
      updatedAt: 0,
      vector: v,
      vectorModel: 'm',
    });
    idx.replaceResource('a', 'p', [e('p', unit(1, 0))]);
    idx.replaceResource('a', 'q', [e('q', unit(0, 1))]);
    expect(idx.vector('a', unit(1, 0), 'm', () => true, 1)[0].entry.id).toBe('p');
    idx.removeResource('a', 'p');
    expect(idx.vector('a', unit(1, 0), 'm', () => true, 5).map((h) => h.entry.id)).toEqual(['q']);
    idx.replaceResource('a', 'r', [e('r', unit(1, 0.1))]);
    expect(idx.vector('a', unit(1, 0), 'm', () => true, 5).map((h) => h.entry.id)).toEqual(['r', 'q']);
  });

  it('updates and removals take effect; workspaces are separate; AND mode needs every term', () => {
    const idx = createMemoryIndex();
    const e = (id: string, text: string, ws = 'a'): IndexEntry => ({
      id,
      workspaceId: ws,
      brainId: null,
      type: 'assets',
      resourceId: id,
      title: '',
      description: '',
      text,
      path: '',
      url: '',
      displayPath: id,
      updatedAt: 0,
    });
    idx.replaceResource('a', 'x', [e('x', 'red fox')]);
    idx.replaceResource('a', 'y', [e('y', 'red hen')]);
    idx.replaceResource('b', 'z', [e('z', 'red fox', 'b')]);
    expect(idx.lexical('a', ['red', 'fox'], () => true, 10, true).map((h) => h.entry.id)).toEqual(['x']);
    idx.replaceResource('a', 'x', [e('x', 'blue whale')]);
    expect(idx.lexical('a', ['fox'], () => true, 10)).toEqual([]);
    idx.removeResource('a', 'y');
    expect(idx.lexical('a', ['red'], () => true, 10)).toEqual([]);
    expect(idx.lexical('b', ['fox'], () => true, 10).map((h) => h.entry.id)).toEqual(['z']);
    expect(idx.size('a')).toBe(1);
  });

  it('after many replacements and removals (tombstones, then a compaction) both legs still equal the references', () => {
    const idx = createMemoryIndex();
    const all = corpus(3000, 8, 11);
    for (const d of all) idx.replaceResource('w', d.id, [{ ...d, resourceId: d.id }]);
    // Remove two thirds (past the compaction point), then re-add some with new text.
    const kept = all.filter((_, i) => i % 3 === 0);
    for (const d of all) if (!kept.includes(d)) idx.removeResource('w', d.id);
    const changed = kept.map((d, i) =>
      i % 2 ? { ...d, resourceId: d.id, text: `${d.text} w7 w7` } : { ...d, resourceId: d.id },
    );
    for (const d of changed.filter((_, i) => i % 2)) idx.replaceResource('w', d.id, [d]);
    expect(idx.size('w')).toBe(kept.length);
    for (const q of [['w7'], ['w3', 'w40'], ['w2', 'w250', 'w7']]) {
      const ref = bm25Reference(changed, q).slice(0, 15);
      const got = idx.lexical('w', q, () => true, 15);
      expect(got.map((h) => h.entry.id)).toEqual(ref.map((r) => r.id));
      got.forEach((h, i) => expect(h.score).toBeCloseTo(ref[i].s, 9));
    }
    const qv = changed[4].vector!;
    const vref = changed
      .map((d) => ({ id: d.id, s: d.vector!.reduce((a, x, i) => a + x * qv[i], 0) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10);
    expect(idx.vector('w', qv, 'm', () => true, 10).map((h) => h.entry.id)).toEqual(vref.map((r) => r.id));
  });

  it('reciprocal rank fusion adds weight / (k + rank) per leg', () => {
    const en = (id: string) => ({ entry: { id } as IndexEntry });
    const fused = fuseRrf(
      [
        { name: 'lexical', hits: [en('a'), en('b')], weight: 1 },
        { name: 'vector', hits: [en('b'), en('c')], weight: 2 },
      ],
      60,
    );
    expect(fused.map((f) => f.entry.id)).toEqual(['b', 'c', 'a']);
    expect(fused[0].score).toBeCloseTo(1 / 62 + 2 / 61, 12);
    expect(fused[0].ranks).toEqual({ lexical: 2, vector: 1 });
  });
});
