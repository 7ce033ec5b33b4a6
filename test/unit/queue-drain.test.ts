import { describe, expect, it, vi } from 'vitest';
import type { Client } from '@temporalio/client';
import { loadConfig } from '../../src/kernel/config.js';
import type { Bus } from '../../src/kernel/events.js';
import type { Streams } from '../../src/kernel/streams.js';
import { createJobService, type JobRepo } from '../../src/jobs/index.js';

/**
 * A workspace's queue is drained by one drain at a time per process. A drain asked for while one is
 * under way (a run gave its place back, a run was queued) may come after that drain looked at the
 * queue and the places: it must not be lost, or a free place waits for the next run's end or the
 * start sweep (10 s).
 */
function serviceWithQueue() {
  let release: (free: boolean) => void = () => undefined;
  const firstLook = new Promise<boolean>((r) => (release = r));
  const looks = vi.fn(async () => (looks.mock.calls.length === 1 ? firstLook : true));
  // The workspace is at its one place each time it is counted: a drain looks, counts, and stops.
  const counts = vi.fn(async () => 1);
  const repo = { hasFreeQueued: looks, countActiveRuns: counts } as unknown as JobRepo;
  const config = loadConfig({}, { WORKSPACE_RUN_SHARE: 1, WORKSPACE_MAX_ACTIVE_RUNS: 1 });
  const jobs = createJobService({
    repo,
    config,
    streams: {} as Streams,
    temporal: {} as Client,
    bus: {} as Bus,
  });
  return { jobs, looks, counts, release: (free: boolean) => release(free) };
}

describe("a workspace's queue drain", () => {
  it('drains once more when asked while a drain is under way', async () => {
    const { jobs, looks, counts, release } = serviceWithQueue();
    const first = jobs.drain('ws');
    // Asked again while the first still looks at the queue: the same drain answers for now.
    const again = jobs.drain('ws');
    expect(looks).toHaveBeenCalledTimes(1);
    release(true);
    await Promise.all([first, again]);
    // Then the workspace is drained once more, and that drain looks at the queue and the places afresh.
    await vi.waitFor(() => expect(counts).toHaveBeenCalledTimes(2));
    expect(looks).toHaveBeenCalledTimes(2);
  });

  it('drains once when nothing asks meanwhile', async () => {
    const { jobs, looks, counts, release } = serviceWithQueue();
    const first = jobs.drain('ws');
    release(true);
    await first;
    await new Promise((r) => setTimeout(r, 50));
    expect(looks).toHaveBeenCalledTimes(1);
    expect(counts).toHaveBeenCalledTimes(1);
  });

  it('keeps one drain per workspace: another workspace drains beside it', async () => {
    const { jobs, looks, release } = serviceWithQueue();
    const first = jobs.drain('ws');
    await jobs.drain('other');
    expect(looks).toHaveBeenCalledTimes(2);
    release(false);
    await first;
    await new Promise((r) => setTimeout(r, 50));
    expect(looks).toHaveBeenCalledTimes(2);
  });
});
