import { describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';
import { sample } from '../support/metrics.js';
import { readSse } from '../support/sse.js';

const { app } = useSimPlatform({ firstTokenMs: [50, 100], interTokenMs: 5, tokens: [3, 6] });

describe('GET /metrics', () => {
  it('counts requests by route pattern and status, runs by kind and outcome, first-token latency, open streams and store commands', async () => {
    const ws = await buildWorkspace(app);
    const before = await (await fetch(`${app.url}/metrics`)).text();
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'measured',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim' },
    });
    await app.get(`/v1/neurons/${String(n.body.id)}`, ws.key);
    await app.get('/v1/neurons/00000000-0000-4000-8000-000000000000', ws.key);
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'count me' });
    // A stream open while we scrape.
    let scraped = '';
    await readSse(`${app.url}/v1/jobs/${String(inv.body.job_id)}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      timeoutMs: 30_000,
      onOpen: async () => {
        scraped = await (await fetch(`${app.url}/metrics`)).text();
      },
    });
    await settleJob(app, ws.key, String(inv.body.job_id));
    // Run metrics are recorded off the run's critical path: wait for the finished run to be counted.
    const finished = (t: string) => sample(t, 'cortex_runs_finished_total', { kind: 'neuron', outcome: 'completed' });
    let res = await fetch(`${app.url}/metrics`);
    let after = await res.text();
    for (let i = 0; i < 50 && finished(after) === finished(before); i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await fetch(`${app.url}/metrics`);
      after = await res.text();
    }
    expect(res.headers.get('content-type')).toContain('text/plain');
    const route = { method: 'GET', route: '/v1/neurons/:id' };
    expect(
      sample(after, 'cortex_http_request_duration_seconds_count', { ...route, status: '200' }) -
        sample(before, 'cortex_http_request_duration_seconds_count', { ...route, status: '200' }),
    ).toBe(1);
    expect(
      sample(after, 'cortex_http_request_duration_seconds_count', { ...route, status: '404' }) -
        sample(before, 'cortex_http_request_duration_seconds_count', { ...route, status: '404' }),
    ).toBe(1);
    expect(
      sample(after, 'cortex_runs_started_total', { kind: 'neuron' }) -
        sample(before, 'cortex_runs_started_total', { kind: 'neuron' }),
    ).toBe(1);
    expect(
      sample(after, 'cortex_runs_finished_total', { kind: 'neuron', outcome: 'completed' }) -
        sample(before, 'cortex_runs_finished_total', { kind: 'neuron', outcome: 'completed' }),
    ).toBe(1);
    expect(sample(after, 'cortex_model_first_token_seconds_count', { provider: 'openai' })).toBeGreaterThan(
      sample(before, 'cortex_model_first_token_seconds_count', { provider: 'openai' }),
    );
    expect(
      Number(
        scraped
          .split('\n')
          .find((l) => l.startsWith('cortex_sse_streams_open '))
          ?.split(' ')[1],
      ),
    ).toBeGreaterThanOrEqual(1);
    // Store round trips are counted by command and collection (the invoke inserted its job, the GETs found the neuron).
    expect(sample(after, 'cortex_mongo_commands_total', { command: 'insert' })).toBeGreaterThan(
      sample(before, 'cortex_mongo_commands_total', { command: 'insert' }),
    );
    const jobInserts = { command: 'insert', collection: 'jobs' };
    expect(sample(after, 'cortex_mongo_commands_total', jobInserts)).toBeGreaterThan(
      sample(before, 'cortex_mongo_commands_total', jobInserts),
    );
    expect(sample(after, 'cortex_mongo_commands_total', { command: 'find' })).toBeGreaterThan(
      sample(before, 'cortex_mongo_commands_total', { command: 'find' }),
    );
    expect(after).toContain('cortex_process_cpu_seconds_total');
  });
});

describe('Server-Timing', () => {
  it('every answer says how long authentication, admission and the whole request took inside the API', async () => {
    const ws = await buildWorkspace(app);
    const res = await app.get('/v1/neurons', ws.key, ws.brainHeaders);
    expect(res.status).toBe(200);
    const phases = Object.fromEntries(
      (res.headers.get('server-timing') ?? '').split(', ').map((p) => {
        const [name, dur] = p.split(';dur=');
        return [name, Number(dur)];
      }),
    );
    expect(Object.keys(phases)).toEqual(['auth', 'admit', 'app']);
    for (const ms of Object.values(phases)) expect(ms).toBeGreaterThanOrEqual(0);
    expect(phases.app).toBeGreaterThanOrEqual(phases.auth! + phases.admit!);
    // A refusal before any route (unknown credential) still says how long the API spent on it.
    const refused = await app.get('/v1/neurons', 'not-a-key');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('server-timing')).toMatch(/app;dur=\d+\.\d/);
  });
});
