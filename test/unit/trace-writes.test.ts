import { describe, expect, it } from 'vitest';
import { traceWriteGuard } from '../../src/runs/trace-writes.js';
import { onTraceChain } from '../../src/temporal/definitions.js';

/** A job service whose leases are counted (and refused once `ended`). */
function leases(ended = false) {
  const taken: string[][] = [];
  return {
    taken,
    jobs: {
      leaseTraceWrite: (_ws: string, ids: string[]) => {
        taken.push(ids);
        return Promise.resolve(ended ? null : new Date(Date.now() + 10_000));
      },
    },
  };
}

describe('trace write leases', () => {
  it('a run a caller started is on its trace chain; a pathway node or an experiment item only when told', () => {
    expect(onTraceChain({ depth: 0 })).toBe(true);
    expect(onTraceChain({ depth: 1, parentJobId: 'p' })).toBe(false);
    expect(onTraceChain({ depth: 1, parentJobId: 'p', traceChain: true })).toBe(true);
    expect(onTraceChain({ depth: 0, parentJobId: 'p', pathwayContext: { pathwayId: 'x', nodeIndex: 1 } })).toBe(false);
    expect(onTraceChain({ depth: 0, traceChain: false })).toBe(false);
  });

  it('a run on a chain leases its job and its top job; one off any chain takes no lease and writes freely', async () => {
    const on = leases();
    const guard = await traceWriteGuard(on.jobs, 'ws', {
      jobId: 'child',
      rootJobId: 'top',
      depth: 1,
      traceChain: true,
    });
    expect(guard).not.toBeNull();
    expect(on.taken).toEqual([['child', 'top']]);
    const off = leases();
    const free = await traceWriteGuard(off.jobs, 'ws', {
      jobId: 'item',
      rootJobId: 'map',
      depth: 1,
      parentJobId: 'map',
    });
    expect(await free!()).toBe(true);
    expect(off.taken).toEqual([]);
  });

  it('an ended run on a chain gets no guard', async () => {
    const ended = leases(true);
    expect(await traceWriteGuard(ended.jobs, 'ws', { jobId: 'a', depth: 0 })).toBeNull();
  });
});
