import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';

/**
 * Threat class: a tenant's expression holds a shared process (docs/pathways.md, "Expressions").
 * The attacker is a pathway editor of workspace B; the victim is workspace A, whose runs share B's
 * worker. The worker of this file runs in the test's own process, so "the worker was held" is
 * measured directly: the event loop's longest stall while B's run evaluates. On the backtracking
 * engine `/^(a+)+$/` over 26 a's and a `!` takes seconds (2^26 paths) in one JSONata step, past the
 * 1 s expression limit that JSONata checks only between steps.
 */
const { app } = usePlatform();

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
type N = { id: string; type: string; data?: Record<string, unknown> };

const EVIL = `${'a'.repeat(26)}!`;

type E = { source: string; target: string; handle?: string };

/** Saves a pathway; without `edges` its nodes form a chain. */
async function pathway(
  ws: Ws,
  nodes: N[],
  edges: E[] = nodes.slice(1).map((n, i) => ({ source: nodes[i].id, target: n.id })),
) {
  return app.post(
    '/v1/pathways',
    ws.key,
    { name: `p-${randomUUID().slice(0, 6)}`, pathway_graph: { nodes, edges } },
    ws.brainHeaders,
  );
}
async function transformPathway(ws: Ws, expression: string) {
  const r = await pathway(ws, [
    { id: 's', type: 'start' },
    { id: 't', type: 'transform', data: { expression } },
    { id: 'o', type: 'output' },
  ]);
  expect(r.status, r.text).toBe(201);
  return String(r.body.id);
}
async function execute(ws: Ws, id: string, input: Record<string, unknown>) {
  const r = await app.post(`/v1/pathways/${id}/execute`, ws.key, { input }, ws.brainHeaders);
  expect(r.status, r.text).toBe(202);
  return String(r.body.job_id);
}
async function finished(ws: Ws, jobId: string, timeoutMs = 30_000) {
  const t0 = Date.now();
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() - t0 > timeoutMs) throw new Error(`job ${jobId} is still ${job.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs `fn` and returns its value with the longest event-loop stall (ms) meanwhile: what the in-process worker was held. */
async function stallDuring<T>(fn: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  try {
    const value = await fn();
    return { value, stallMs: h.max / 1e6 };
  } finally {
    h.disable();
  }
}

describe('expression denial of service (a tenant expression cannot hold the worker)', () => {
  it('a catastrophic regex in a transform finishes at once, and a run of another workspace beside it is not held', async () => {
    const [b, a] = [await buildWorkspace(app), await buildWorkspace(app)];
    const evil = await transformPathway(b, '$contains(input.s, /^(a+)+$/)');
    const plain = await transformPathway(a, 'input.n + 1');
    // Warm both paths (workflow bundle, first activity) so the measure is the expression's.
    expect((await finished(a, await execute(a, plain, { n: 0 }))).status).toBe('completed');

    const { value, stallMs } = await stallDuring(async () => {
      const [jb, ja] = await Promise.all([execute(b, evil, { s: EVIL }), execute(a, plain, { n: 41 })]);
      const t0 = Date.now();
      const [jobB, jobA] = await Promise.all([finished(b, jb), finished(a, ja)]);
      return { jobB, jobA, ms: Date.now() - t0 };
    });
    expect(value.jobB.status).toBe('completed');
    expect(value.jobB.result).toMatchObject({ output: false });
    expect(value.jobA.status).toBe('completed');
    expect(value.jobA.result).toMatchObject({ output: 42 });
    // Neither the worker nor the API (same process here) stalled: no step held the loop.
    expect(stallMs).toBeLessThan(500);
    expect(value.ms).toBeLessThan(5_000);
  });

  it('the same regex in a condition and in a template (on a 100 000-character text) stays linear', async () => {
    const b = await buildWorkspace(app);
    const r = await pathway(
      b,
      [
        { id: 's', type: 'start' },
        { id: 'i', type: 'if', data: { condition: '$contains(input.s, /^(a+)+$/)' } },
        { id: 'o', type: 'output', data: { value: '"done"' } },
      ],
      [
        { source: 's', target: 'i' },
        { source: 'i', target: 'o', handle: 'true' },
        { source: 'i', target: 'o', handle: 'false' },
      ],
    );
    expect(r.status, r.text).toBe(201);
    const jobId = await execute(b, String(r.body.id), { s: `${'a'.repeat(100_000)}!` });
    const { value: job, stallMs } = await stallDuring(() => finished(b, jobId));
    expect(job.status).toBe('completed');
    expect(job.result).toMatchObject({ output: 'done' });
    expect(stallMs).toBeLessThan(500);

    const t = await pathway(b, [
      { id: 's', type: 'start' },
      { id: 'x', type: 'transform', data: { template: 'match: {{ $contains(input.s, /^(a|aa)+$/) }}' } },
      { id: 'o', type: 'output' },
    ]);
    expect(t.status, t.text).toBe(201);
    const tj = await execute(b, String(t.body.id), { s: EVIL });
    const { value: tjob, stallMs: tStall } = await stallDuring(() => finished(b, tj));
    expect(tjob.result).toMatchObject({ output: 'match: false' });
    expect(tStall).toBeLessThan(500);
  });

  it('a pattern the linear engine cannot run is refused at save with a 400 naming the node and field', async () => {
    const b = await buildWorkspace(app);
    for (const [expression, what] of [
      ['$match(input.s, /(a+)\\1/)', '\\1'],
      ['$contains(input.s, /a(?=b)/)', '(?='],
      ['$replace(input.s, /(?<!x)a/, "b")', '(?<'],
    ]) {
      const r = await pathway(b, [
        { id: 's', type: 'start' },
        { id: 'bad', type: 'transform', data: { expression } },
        { id: 'o', type: 'output' },
      ]);
      expect(r.status, expression).toBe(400);
      expect(r.body.message).toContain('node "bad" (transform): data.expression');
      expect(r.body.message).toContain('not supported');
      expect(String(r.body.message)).toContain(what);
    }
    const tpl = await pathway(b, [
      { id: 's', type: 'start' },
      { id: 'n', type: 'http', data: { url: 'https://example.com/{{ $replace(input.s, /(a)\\1/, "") }}' } },
      { id: 'o', type: 'output' },
    ]);
    expect(tpl.status).toBe(400);
    expect(tpl.body.message).toContain('node "n" (http): data.url');
  });

  it('a pattern that arrives with the run ($eval of run data) fails its node clearly, without hanging', async () => {
    const b = await buildWorkspace(app);
    const id = await transformPathway(b, '$eval(input.code)');
    const bad = await execute(b, id, { code: `$contains("${EVIL}", /^(a+)\\1$/)` });
    const job = await finished(b, bad);
    expect(job.status).toBe('failed');
    expect(job.failedReason).toMatch(/not supported/);
    // A catastrophic pattern RE2 can run, smuggled the same way, is simply linear.
    const { value, stallMs } = await stallDuring(async () =>
      finished(b, await execute(b, id, { code: `$contains("${EVIL}", /^(a+)+$/)` })),
    );
    expect(value.result).toMatchObject({ output: false });
    expect(stallMs).toBeLessThan(500);
  });

  it("$toMillis's picture, which JSONata turns into a backtracking pattern, is parsed linearly too", async () => {
    const b = await buildWorkspace(app);
    const id = await transformPathway(b, '$toMillis(input.ts, input.picture)');
    const jobId = await execute(b, id, { ts: `${'a'.repeat(70)}1`, picture: '[MNn][FNn][MNn][FNn][MNn][FNn]' });
    const { value: job, stallMs } = await stallDuring(() => finished(b, jobId));
    expect(['completed', 'failed']).toContain(job.status);
    expect(stallMs).toBeLessThan(500);
    const ok = await execute(b, id, { ts: '2024-02-29', picture: '[Y0001]-[M01]-[D01]' });
    expect((await finished(b, ok)).result).toMatchObject({ output: Date.UTC(2024, 1, 29) });
  });

  it('a function JSONata makes quadratic within one step ($distinct of objects) does not hold the worker', async () => {
    const b = await buildWorkspace(app);
    const id = await transformPathway(b, '$count($distinct([1..input.n].{ "k": $ }))');
    const jobId = await execute(b, id, { n: 8_000 });
    const { value: job, stallMs } = await stallDuring(() => finished(b, jobId));
    expect(job.result).toMatchObject({ output: 8_000 });
    expect(stallMs).toBeLessThan(500);
  });

  it('saving a graph whose expression text is built to be slow to read answers at once (the API is shared too)', async () => {
    const b = await buildWorkspace(app);
    for (const [field, text] of [
      // `{{` without `}}`: a lazy placeholder pattern rescans the rest of the text from each one.
      ['template', '{{'.repeat(60_000)],
      // Whitespace runs before the end of a placeholder: `/\s*$/` is quadratic in them.
      ['template', `{{${' '.repeat(60_000)}x }}`],
      // JavaScript-style operators are rewritten; rewriting must stay linear in the text.
      ['expression', 'a && '.repeat(50_000)],
      ['expression', '!('.repeat(10_000)],
    ] as const) {
      const t0 = Date.now();
      const r = await pathway(b, [
        { id: 's', type: 'start' },
        { id: 'x', type: 'transform', data: { [field]: text } },
        { id: 'o', type: 'output' },
      ]);
      expect([201, 400], `${field}: ${text.slice(0, 12)}… ${r.text.slice(0, 200)}`).toContain(r.status);
      expect(Date.now() - t0, `${field}: ${text.slice(0, 12)}…`).toBeLessThan(1_500);
    }
  });

  it('grep with a catastrophic pattern answers at once (grep matches literal text, never a pattern)', async () => {
    const b = await buildWorkspace(app);
    await transformPathway(b, 'input');
    for (const query of ['pathways/(a+)+$', `pathways/${EVIL}`, 'pathways/(.*a){30}', 'pathways/[']) {
      const t0 = Date.now();
      const r = await app.post('/v1/grep', b.key, { query }, b.brainHeaders);
      expect(r.status, r.text).toBe(200);
      expect(Date.now() - t0).toBeLessThan(2_000);
    }
  });
});
