import type { SearchHit } from '../src/search/index.js';
import type { Services } from '../src/compose/services.js';
import type { SearchJobInput } from '../src/temporal/definitions.js';

type Facet = { type: SearchJobInput['types'][number]; hits: SearchHit[]; total: number };

/** The `search` workflow's activities: thin adapters over the search service (the worker's own index). */
export const createSearchActivities = ({ services }: { services: Services }) => ({
  searchFacet: (i: SearchJobInput, type: SearchJobInput['types'][number]): Promise<Facet> =>
    services.search.facetFor(i, type),
  searchProgress: (i: SearchJobInput, done: number, total: number, type: string) =>
    services.search.progress(i, done, total, type),
  searchFinish: (i: SearchJobInput, facets: Facet[]) => services.search.finishAsync(i, facets),
  searchFail: (i: SearchJobInput, reason: string) => services.search.failAsync(i, reason),
});
