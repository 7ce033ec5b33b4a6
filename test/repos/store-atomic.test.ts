/**
 * Single-document updates are atomic on the store the platform runs (docs/store.md): a filter and
 * an update in one `updateOne` / `findOneAndUpdate` / `deleteOne` apply together or not at all,
 * under concurrent writers. FerretDB's SQLite backend reads a command's documents and writes them
 * back in two statements; the patch level cortex.5 makes the write a compare-and-set
 * (scripts/ferretdb-sqlite-cas.patch). Before it, 10 concurrent compare-and-sets had several
 * winners and 200 concurrent `$inc` of one counter summed to about 160.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

interface Doc {
  _id: string;
  owner?: string;
  n?: number;
  log?: number[];
}

describe('single-document atomicity under concurrent writers', () => {
  it('a compare-and-set has exactly one winner', async () => {
    const c = h.db.collection<Doc>('atomic_cas');
    for (let round = 0; round < 10; round++) {
      const _id = randomUUID();
      await c.insertOne({ _id, owner: 'none' });
      const rs = await Promise.all(
        Array.from({ length: 10 }, (_, i) => c.updateOne({ _id, owner: 'none' }, { $set: { owner: `w${i}` } })),
      );
      expect(rs.filter((r) => r.modifiedCount === 1)).toHaveLength(1);
      const winner = rs.findIndex((r) => r.modifiedCount === 1);
      expect((await c.findOne({ _id }))?.owner).toBe(`w${winner}`);
    }
  });

  it('concurrent increments and pushes on one document all land', async () => {
    const c = h.db.collection<Doc>('atomic_inc');
    const _id = randomUUID();
    await c.insertOne({ _id, n: 0, log: [] });
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => c.updateOne({ _id }, { $inc: { n: 1 }, $push: { log: i } })),
    );
    const doc = await c.findOne({ _id });
    expect(doc?.n).toBe(100);
    expect([...(doc?.log ?? [])].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('findOneAndUpdate claims once; a conditional delete and a conditional update never both win', async () => {
    const c = h.db.collection<Doc>('atomic_claims');
    for (let round = 0; round < 10; round++) {
      const _id = randomUUID();
      await c.insertOne({ _id, owner: 'free' });
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          c.findOneAndUpdate({ _id, owner: 'free' }, { $set: { owner: `c${i}` } }, { returnDocument: 'after' }),
        ),
      );
      expect(claims.filter((x) => x !== null)).toHaveLength(1);
      const [moved, dropped] = await Promise.all([
        c.updateOne({ _id, owner: { $ne: 'free' } }, { $set: { owner: 'free' } }),
        c.deleteOne({ _id, owner: { $ne: 'free' } }),
      ]);
      expect(moved.modifiedCount + dropped.deletedCount).toBe(1);
    }
  });

  it('the trace head (double-texting) takes one newest run at a time', async () => {
    for (const backend of h.backends) {
      const jobs = h.repos(backend).jobs;
      const ws = randomUUID();
      const trace = randomUUID();
      expect(await jobs.swapTraceHead(ws, trace, null, 'first')).toBe(true);
      const swaps = await Promise.all(
        Array.from({ length: 10 }, (_, i) => jobs.swapTraceHead(ws, trace, 'first', `next-${i}`)),
      );
      expect(swaps.filter(Boolean), backend).toHaveLength(1);
      expect((await jobs.traceHead(ws, trace))?.jobId).toBe(`next-${swaps.indexOf(true)}`);
    }
  });
});
