import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes/index.js';

describe('route wiring', () => {
  it('every route names the services its handler is given (areaRoutes), none gets the whole bag', () => {
    const whole = allRoutes()
      .filter((r) => !r.uses)
      .map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect(whole).toEqual([]);
  });

  it('a route is given only the services it names', () => {
    const bag = new Proxy({} as Record<string, unknown>, {
      get: (_t, name) => ({ service: String(name) }),
    });
    for (const r of allRoutes()) {
      const picked = r.uses!(bag as never) as Record<string, { service: string }>;
      for (const [name, value] of Object.entries(picked)) expect(value.service).toBe(name);
      expect(Object.keys(picked).length).toBeLessThanOrEqual(10);
    }
  });
});
