import type { IndexFilter, SearchBackend } from './backend.js';
import { fuseRrf, type IndexEntry, type Scored } from './memory-index.js';

/** How a hit's fused score came about (`explain: true`): score = Σ weight / (k + rank) over the legs it is in. */
export interface HitExplain {
  lexical: { rank: number; score: number } | null;
  vector: { rank: number; similarity: number } | null;
  fused: number;
  k: number;
  weights: { lexical: number; vector: number };
  /** Kept although below the threshold, because the lexical leg matched it. */
  kept_by_lexical?: boolean;
}
export interface RankedHit {
  entry: IndexEntry;
  score: number;
  similarity: number;
  explain: HitExplain;
}

const dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

/**
 * The one ranking path of search, recollection search and the bench (docs/search.md, Ranking):
 * BM25 top `depth` and exact-vector top `depth`, fused by RRF (k, weights); the threshold is
 * applied after fusion, to hits that only the vector leg found (a lexical match is kept and
 * marked); then one hit per resource, its best entry. `similarity` is the cosine with the query
 * when the entry has a vector of the query's model, else the BM25 score relative to the best hit.
 */
export async function rankEntries(
  index: SearchBackend,
  o: {
    workspaceId: string;
    terms: string[];
    query: { vector: Float32Array; model: string } | null;
    filter: IndexFilter;
    depth: number;
    lexical: boolean;
    k: number;
    weights: { lexical: number; vector: number };
    threshold?: number;
  },
): Promise<RankedHit[]> {
  const q = o.query;
  // The two legs are independent queries (two engine calls on Weaviate, run side by side).
  const [lexical, vector]: Scored[][] = await Promise.all([
    o.lexical ? index.lexical(o.workspaceId, o.terms, o.filter, o.depth) : [],
    q ? index.vector(o.workspaceId, q.vector, q.model, o.filter, o.depth) : [],
  ]);
  const fused = fuseRrf(
    [
      { name: 'lexical', hits: lexical, weight: o.weights.lexical },
      { name: 'vector', hits: vector, weight: o.weights.vector },
    ],
    o.k,
  );
  const lexScore = new Map(lexical.map((h) => [h.entry.id, h.score]));
  const vecScore = new Map(vector.map((h) => [h.entry.id, h.score]));
  const topLexical = lexical[0]?.score ?? 1;
  const seen = new Set<string>();
  const out: RankedHit[] = [];
  for (const f of fused) {
    const e = f.entry;
    const sim =
      vecScore.get(e.id) ??
      (q && e.vector && e.vectorModel === q.model && e.vector.length === q.vector.length
        ? dot(q.vector, e.vector)
        : null);
    const similarity = sim ?? (lexScore.has(e.id) ? lexScore.get(e.id)! / topLexical : 0);
    const explain: HitExplain = {
      lexical: f.ranks.lexical ? { rank: f.ranks.lexical, score: lexScore.get(e.id)! } : null,
      vector: f.ranks.vector ? { rank: f.ranks.vector, similarity: vecScore.get(e.id)! } : null,
      fused: f.score,
      k: o.k,
      weights: o.weights,
    };
    if (o.threshold !== undefined && sim !== null && sim < o.threshold) {
      if (!f.ranks.lexical) continue;
      explain.kept_by_lexical = true;
    }
    if (seen.has(e.resourceId)) continue;
    seen.add(e.resourceId);
    out.push({ entry: e, score: f.score, similarity: Math.round(similarity * 1e6) / 1e6, explain });
  }
  return out;
}
