import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createProgressCoalescer } from '../../src/jobs/index.js';

describe("a job's progress writes, coalesced", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const setup = () => {
    const written: string[] = [];
    const c = createProgressCoalescer(async (jobId, p: string) => {
      written.push(`${jobId}:${p}`);
    }, 250);
    return { c, written };
  };

  it('the first write goes out at once; writes within the gap are held and only the newest goes out after it', async () => {
    const { c, written } = setup();
    await c.report('j1', 'extracting');
    await c.report('j1', 'chunking');
    await c.report('j1', 'embedding 0/3');
    expect(written).toEqual(['j1:extracting']);
    await vi.advanceTimersByTimeAsync(249);
    expect(written).toEqual(['j1:extracting']);
    await vi.advanceTimersByTimeAsync(1);
    expect(written).toEqual(['j1:extracting', 'j1:embedding 0/3']);
    // Past the gap again: the next one goes out at once.
    await vi.advanceTimersByTimeAsync(300);
    await c.report('j1', 'embedding 3/3');
    expect(written).toEqual(['j1:extracting', 'j1:embedding 0/3', 'j1:embedding 3/3']);
  });

  it('a job that ends within the gap writes its first progress only; nothing of it is written after it settles', async () => {
    const { c, written } = setup();
    await c.report('j1', 'extracting');
    await c.report('j1', 'chunking');
    c.settle('j1');
    await vi.advanceTimersByTimeAsync(1000);
    expect(written).toEqual(['j1:extracting']);
  });

  it('jobs are coalesced each on its own', async () => {
    const { c, written } = setup();
    await c.report('j1', 'a');
    await c.report('j2', 'a');
    await c.report('j1', 'b');
    expect(written).toEqual(['j1:a', 'j2:a']);
    await vi.advanceTimersByTimeAsync(250);
    expect(written).toEqual(['j1:a', 'j2:a', 'j1:b']);
  });
});
