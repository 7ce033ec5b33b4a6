import type { Page } from '../../src/db/paging.js';

/** The wire form of a page's paging fields (src/schemas/common.ts `pageFields`); `has_more` where the list's schema has it. */
export const presentPage = (p: Omit<Page<unknown>, 'items'>) =>
  ({ total: p.total, limit: p.limit, offset: p.offset, has_more: p.hasMore, next_cursor: p.nextCursor, total_exact: p.totalExact });
