/**
 * A counting semaphore: at most `n` of the functions given to `run` execute at once, the others
 * wait in arrival order. Background work (ingest of assets and memories) runs through one, so a
 * burst of uploads cannot take every store connection and CPU slice from the requests beside it.
 */
export function createLimiter(n: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return {
    async run<T>(fn: () => Promise<T>): Promise<T> {
      if (running >= n) await new Promise<void>((r) => waiting.push(r));
      else running++;
      try {
        return await fn();
      } finally {
        const next = waiting.shift();
        if (next)
          next(); // the slot passes to the next waiter
        else running--;
      }
    },
    load: () => ({ running, waiting: waiting.length }),
  };
}

/**
 * A workspace's share of a capacity of `total` (docs/operations.md, "Fair share"): `percent` of
 * it, rounded up, at least one. Every shared capacity states its share next to its global cap.
 */
export const shareOf = (total: number, percent: number): number => Math.max(1, Math.ceil((total * percent) / 100));
