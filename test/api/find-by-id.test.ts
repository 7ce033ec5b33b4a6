import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { findById } from '../../src/kernel/store/client.js';
import { useTestApp } from '../support/app.js';

const app = useTestApp();

interface Doc {
  _id: string;
  workspaceId: string;
  deletedAt?: Date | null;
  name: string;
}

describe('findById (a key read, the other conditions checked on the document)', () => {
  it('matches as the filter would: equality, null for null or missing, and a miss for another workspace', async () => {
    const coll = app.deps.db.collection<Doc>(`find_by_id_${randomUUID().slice(0, 8)}`);
    const ws = randomUUID();
    await coll.insertMany([
      { _id: 'a', workspaceId: ws, name: 'no deletedAt' },
      { _id: 'b', workspaceId: ws, deletedAt: null, name: 'null deletedAt' },
      { _id: 'c', workspaceId: ws, deletedAt: new Date(), name: 'deleted' },
    ]);
    expect((await findById(coll, 'a', { workspaceId: ws, deletedAt: null }))?.name).toBe('no deletedAt');
    expect((await findById(coll, 'b', { workspaceId: ws, deletedAt: null }))?.name).toBe('null deletedAt');
    expect(await findById(coll, 'c', { workspaceId: ws, deletedAt: null })).toBeNull();
    expect(await findById(coll, 'a', { workspaceId: randomUUID() })).toBeNull();
    expect(await findById(coll, 'missing', { workspaceId: ws })).toBeNull();
    expect((await findById(coll, 'c'))?.name).toBe('deleted');
  });

  it('widens an inclusive projection to the checked fields, so the check still sees them', async () => {
    const coll = app.deps.db.collection<Doc>(`find_by_id_${randomUUID().slice(0, 8)}`);
    const ws = randomUUID();
    await coll.insertOne({ _id: 'a', workspaceId: ws, name: 'x' });
    expect(await findById(coll, 'a', { workspaceId: ws }, { projection: { _id: 1 } })).toMatchObject({ _id: 'a' });
    expect(await findById(coll, 'a', { workspaceId: randomUUID() }, { projection: { _id: 1 } })).toBeNull();
  });
});
