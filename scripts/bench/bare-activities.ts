/**
 * Activities of the bare baseline workflow of `npm run bench` (scripts/bench.ts).
 *
 * Why: the benchmark compares the platform against the cheapest thing Temporal can do with one
 * activity on the same server. The activity body does no I/O, so what a bare run costs is
 * Temporal's own scheduling: workflow start, two workflow tasks and one activity task.
 */
export const createBenchActivities = () => ({
  /** Returns its argument unchanged: the measured time is dispatch, not work. */
  async benchEcho(value: string): Promise<string> {
    return value;
  },
});

/** The activity interface the bare workflow proxies (imported there as a type only: workflow code loads no activity code). */
export type BenchActivities = ReturnType<typeof createBenchActivities>;
