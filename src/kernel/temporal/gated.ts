type Method = (input: unknown, next: (input: unknown) => unknown) => unknown;

/**
 * `inner`'s interceptor methods, each delegating to it only while `on()` says so and passing
 * straight to `next` otherwise. Pure (no imports): used by the API's Temporal client
 * (src/kernel/temporal/client.ts) and inside the workflow sandbox (workflows/interceptors.ts).
 */
export function gated<T extends object>(inner: T, on: () => boolean): T {
  const out: Record<string, Method> = {};
  for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(inner))) {
    const method = (inner as Record<string, unknown>)[name];
    if (name === 'constructor' || typeof method !== 'function') continue;
    out[name] = (input, next) => (on() ? (method as Method).call(inner, input, next) : next(input));
  }
  return out as T;
}

/**
 * Like `gated`, for an interceptor that is made only when first needed: `methods` are its method
 * names (known without making it), `make` runs at the first call made while `on()` says so. Off,
 * every method passes straight to `next` and nothing is made.
 */
export function lazyGated<T extends object>(methods: readonly string[], make: () => T, on: () => boolean): T {
  let inner: T | undefined;
  const out: Record<string, Method> = {};
  for (const name of methods) {
    out[name] = (input, next) => {
      if (!on()) return next(input);
      inner ??= make();
      const method = (inner as Record<string, unknown>)[name];
      return typeof method === 'function' ? (method as Method).call(inner, input, next) : next(input);
    };
  }
  return out as T;
}
