import type { Page } from '../../src/kernel/store/paging.js';

/**
 * The wire form of a page's paging fields (src/kernel/schemas.ts `pageFields`). `fixed`: the list's
 * body is fixed by the API reference (its keys, `has_more` or not); the cursor fields are added only
 * when the request paged by cursor (`cursor` sent).
 */
interface PageWire {
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
  next_cursor: string | null;
  total_exact: boolean;
}
export function presentPage(p: Omit<Page<unknown>, 'items'>): PageWire;
export function presentPage(
  p: Omit<Page<unknown>, 'items'>,
  fixed: { hasMore: boolean; byCursor: boolean },
): Pick<PageWire, 'total' | 'limit' | 'offset'> & Partial<PageWire>;
export function presentPage(
  p: Omit<Page<unknown>, 'items'>,
  fixed?: { hasMore: boolean; byCursor: boolean },
): Pick<PageWire, 'total' | 'limit' | 'offset'> & Partial<PageWire> {
  const base = { total: p.total, limit: p.limit, offset: p.offset };
  if (fixed && !fixed.byCursor) return fixed.hasMore ? { ...base, has_more: p.hasMore } : base;
  return { ...base, has_more: p.hasMore, next_cursor: p.nextCursor, total_exact: p.totalExact };
}
