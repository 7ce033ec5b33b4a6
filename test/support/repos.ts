/**
 * The repository conformance suite's harness (test/repos/*.test.ts).
 *
 * Each test file gets its own database on the store the integration project runs against: the
 * embedded FerretDB by default, MongoDB when MONGODB_URI is set (test/support/global-setup.ts).
 * `backends` lists the repository forms the file checks: on FerretDB both forms run (the MongoDB
 * form is correct there too, only slower), on MongoDB only the MongoDB form (FerretDB's
 * workarounds are not needed there and are not what production runs).
 */
import { randomUUID } from 'node:crypto';
import { Collection, MongoClient, type Db } from 'mongodb';
import { inject } from 'vitest';
import { ensureIndexes } from '../../src/kernel/store/client.js';
import { allIndexes, createRepos, detectBackend, type Repos, type StoreBackend } from '../../src/compose/stores.js';

export interface RepoHarness {
  /** The raw database (for checks the repositories do not offer, and for seeding stored shapes). */
  db: Db;
  /** The store this run talks to. */
  store: StoreBackend;
  /** The repository forms to check on this store. */
  backends: StoreBackend[];
  repos: (backend: StoreBackend) => Repos;
  close: () => Promise<void>;
}

export async function openRepoHarness(): Promise<RepoHarness> {
  const client = new MongoClient(inject('mongoUri'), { ignoreUndefined: true, serverSelectionTimeoutMS: 5_000 });
  await client.connect();
  const db = client.db(`cortex_repos_${randomUUID().slice(0, 8)}`);
  await ensureIndexes(db, allIndexes);
  const store = await detectBackend(db);
  return {
    db,
    store,
    backends: store === 'ferretdb' ? ['ferretdb', 'mongodb'] : ['mongodb'],
    repos: (backend) => createRepos(db, { backend }),
    close: async () => {
      await db.dropDatabase().catch(() => undefined); // a test database left behind is harmless
      await client.close();
    },
  };
}

/** The names of a repository's members that are driver collections (the boundary exposes none). */
export function exposedCollections(repo: object): string[] {
  return Object.entries(repo)
    .filter(([, v]) => v instanceof Collection)
    .map(([k]) => k);
}
