import { describe, expect, it } from 'vitest';
import { whereTest } from '../../src/search/backend.js';
import type { IndexEntry } from '../../src/search/memory-index.js';
import { containsPatterns } from '../../src/search/weaviate-index.js';

/** Grep's pattern as Weaviate `like` patterns (docs/search.md, "Grep"): a necessary condition only. */
describe('containsPatterns', () => {
  it('turns each ASCII run into a token pattern by what bounds it, preferring the ones that seek', () => {
    expect(containsPatterns('platypus')).toEqual(['*platypus*']);
    expect(containsPatterns('Platypus')).toEqual(['*platypus*']);
    expect(containsPatterns('plat ')).toEqual(['*plat']);
    expect(containsPatterns(' pus')).toEqual(['pus*']);
    // Whole-token runs and runs at the end seek; the walk of `*q3` is left out.
    expect(containsPatterns('q3 report')).toEqual(['report*']);
    expect(containsPatterns('mail, never by')).toEqual(['never*', 'by*']);
    expect(containsPatterns('e-mail')).toEqual(['mail*']);
  });

  it('gives nothing without an ASCII letter or digit, or with a character outside ASCII', () => {
    for (const p of ['*', '—', ' - ', 'über', 'brücke', 'i\u0307']) expect(containsPatterns(p), p).toEqual([]);
  });

  it('the embedded predicate of `contains` is the substring on title, description or text', () => {
    const e = { title: 'Quarterly REPORT', description: 'Q3', text: 'by e-mail' } as IndexEntry;
    const t = (contains: string) =>
      whereTest({ types: ['artifacts'], contains })({ ...e, type: 'artifacts', id: 'x', resourceId: 'x' });
    expect(t('report')).toBe(true);
    expect(t('y rep')).toBe(true);
    expect(t('q3')).toBe(true);
    expect(t('e-mail')).toBe(true);
    expect(t('email')).toBe(false);
  });
});
