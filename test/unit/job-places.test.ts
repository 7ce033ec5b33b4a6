import { describe, expect, it } from 'vitest';
import { placesOf } from '../../src/jobs/store.mongo.js';

// An archive exported before data format 2 holds job and run-queue rows without the fair share's
// marks; the import brings each row up to format 2 by the `job-places` migration's rule.
describe('rows of an archive made before data format 2', () => {
  const job = { _id: 'j', workspaceId: 'w', kind: 'neuron', parentJobId: null, status: 'running' };

  it('marks a top-level run that is not queued as holding a place', () => {
    expect(placesOf('jobs', job)).toMatchObject({ holdsPlace: true });
    expect(placesOf('jobs', { ...job, kind: 'pathway' })).toMatchObject({ holdsPlace: true });
  });

  it('does not mark a child, a queued run or a job that is not a run', () => {
    expect(placesOf('jobs', { ...job, parentJobId: 'p' })).toMatchObject({ holdsPlace: false });
    expect(placesOf('jobs', { ...job, queued: true })).toMatchObject({ holdsPlace: false });
    expect(placesOf('jobs', { ...job, kind: 'ingest' })).toMatchObject({ holdsPlace: false });
  });

  it('keeps a row already of format 2 as it is', () => {
    const marked = { ...job, holdsPlace: false };
    expect(placesOf('jobs', marked)).toBe(marked);
    const entry = { _id: 'q', after: 'x', free: true };
    expect(placesOf('run_queue', entry)).toBe(entry);
  });

  it('frees a queue entry that waits for no run on its trace', () => {
    expect(placesOf('run_queue', { _id: 'q', after: null })).toMatchObject({ free: true });
    expect(placesOf('run_queue', { _id: 'q' })).toMatchObject({ free: true });
    expect(placesOf('run_queue', { _id: 'q', after: 'other' })).toMatchObject({ free: false });
  });

  it('leaves rows of other collections alone', () => {
    const row = { _id: 'n', kind: 'neuron' };
    expect(placesOf('neurons', row)).toBe(row);
  });
});
