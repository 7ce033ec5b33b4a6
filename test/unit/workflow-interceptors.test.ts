import { describe, expect, it } from 'vitest';
import * as otel from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import { OTEL_METHODS } from '../../workflows/interceptors.js';
import { lazyGated } from '../../src/kernel/temporal/gated.js';

const methodsOf = (cls: { prototype: object }) =>
  Object.getOwnPropertyNames(cls.prototype)
    .filter((n) => n !== 'constructor')
    .sort();

describe('workflow interceptors', () => {
  it('list exactly the methods of the installed OpenTelemetry interceptors (they are made lazily, by name)', () => {
    expect([...OTEL_METHODS.inbound].sort()).toEqual(methodsOf(otel.OpenTelemetryInboundInterceptor));
    expect([...OTEL_METHODS.outbound].sort()).toEqual(methodsOf(otel.OpenTelemetryOutboundInterceptor));
    expect([...OTEL_METHODS.internals].sort()).toEqual(methodsOf(otel.OpenTelemetryInternalsInterceptor));
  });

  it('lazyGated makes the interceptor at the first call made while on, once, and passes through while off', () => {
    let made = 0;
    let on = false;
    const g = lazyGated<{ a(i: number, next: (i: number) => number): number }>(
      ['a'],
      () => {
        made++;
        return { a: (i, next) => next(i) * 10 };
      },
      () => on,
    );
    const next = (i: number) => i + 1;
    expect(g.a(1, next)).toBe(2);
    expect(made).toBe(0);
    on = true;
    expect(g.a(1, next)).toBe(20);
    expect(g.a(2, next)).toBe(30);
    expect(made).toBe(1);
  });
});
