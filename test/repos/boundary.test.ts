/**
 * The storage boundary (docs/architecture.md, "Storage boundary"): repositories offer domain
 * operations only, never a driver collection, so services cannot reach past them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exposedCollections, openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

describe('storage boundary', () => {
  it('no repository exposes a driver collection', () => {
    for (const backend of h.backends) {
      const repos = h.repos(backend);
      const exposed = Object.entries(repos).flatMap(([area, repo]) =>
        exposedCollections(repo as object).map((name) => `${area}.${name}`),
      );
      expect(exposed).toEqual([]);
    }
  });
});
