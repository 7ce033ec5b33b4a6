/** How often a job's progress is written at most while it runs (its first write is never held back). */
const PROGRESS_GAP_MS = 250;
const MAX_JOBS = 10_000;

/**
 * Coalesces a process's progress writes per job: the first write of a job goes out at once, and
 * later ones at most every `gapMs`; a write held back goes out when the gap has passed unless a
 * newer one replaced it first, or `settle` dropped it. A job that ends within a gap of its last
 * write (a small artifact's ingest: extracting, chunking, embedding in about 50 ms) so writes one
 * progress instead of three, each a store round trip and a stream entry; a long one still shows each
 * step within `gapMs` of reaching it. `settle` must be called when the job ends, before its end is
 * written: nothing of it is written after that.
 */
export function createProgressCoalescer<P>(write: (jobId: string, p: P) => Promise<unknown>, gapMs = PROGRESS_GAP_MS) {
  const jobs = new Map<string, { lastAt: number; held?: P; timer?: NodeJS.Timeout }>();
  const flush = (jobId: string) => {
    const j = jobs.get(jobId);
    if (!j || j.held === undefined) return;
    const p = j.held;
    j.held = undefined;
    j.timer = undefined;
    j.lastAt = Date.now();
    // Silent on purpose: a held-back progress write is advisory, and the job's next write or end supersedes it.
    write(jobId, p).catch(() => undefined);
  };
  return {
    /** Writes the job's progress now, or holds it back until the gap since the last write has passed. */
    async report(jobId: string, p: P): Promise<void> {
      const now = Date.now();
      const j = jobs.get(jobId);
      if (!j || now - j.lastAt >= gapMs) {
        if (j?.timer) clearTimeout(j.timer);
        if (!j && jobs.size >= MAX_JOBS) jobs.delete(jobs.keys().next().value!);
        jobs.set(jobId, { lastAt: now });
        await write(jobId, p);
        return;
      }
      j.held = p;
      j.timer ??= setTimeout(() => flush(jobId), j.lastAt + gapMs - now);
      j.timer.unref?.();
    },
    /** The job ends: a progress held back is dropped, and the job forgotten. */
    settle(jobId: string): void {
      const j = jobs.get(jobId);
      if (j?.timer) clearTimeout(j.timer);
      jobs.delete(jobId);
    },
  };
}
