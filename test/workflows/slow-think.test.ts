import { expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { useSimPlatform } from '../support/platform.js';
import { shownReply } from '../support/sse.js';
import { settleJob } from '../support/jobs.js';

/**
 * Liveness does not depend on tokens: a model that thinks for a minute before its first token
 * (reasoning models take 10–60 s), then a turn that only calls a tool after another long think,
 * both complete. Before timer heartbeats, the run failed with "activity Heartbeat timeout"
 * after about 28 s (5 s heartbeat timeout, heartbeats only on tokens).
 */
const { app, sim } = useSimPlatform({ tokens: 6, interTokenMs: 20 });

it('a model that thinks 60 s before its first token (after a tool-only turn that thinks 10 s) completes', async () => {
  const ws = await buildWorkspace(app);
  const neuron = (
    await app.post('/v1/neurons', ws.key, {
      name: 'thinker',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/o-sim', tools: ['current_time'] },
    })
  ).body as { id: string };
  sim.configure({
    firstTokenMs: 10_000,
    toolCalls: (body) => {
      if (body.messages.some((m) => m.role === 'tool')) {
        sim.configure({ firstTokenMs: 60_000 });
        return null;
      }
      return [{ name: 'current_time', arguments: {} }];
    },
  });
  const started = Date.now();
  const inv = await app.post(`/v1/neurons/${neuron.id}/invoke`, ws.key, { message: 'think hard' });
  expect(inv.status).toBe(202);
  const jobId = String(inv.body.job_id);
  const job = await settleJob(app, ws.key, jobId, 130_000, 250);
  expect(job.status, String(job.failedReason)).toBe('completed');
  expect(Date.now() - started).toBeGreaterThan(65_000); // the thinks really happened
  expect(sim.requests).toHaveLength(2); // no turn was retried
  const entries = (await app.services.streams.range(app.services.jobs.streamKey(jobId), undefined, 10_000)).map(
    (e) => e.data,
  );
  expect(entries.some((e) => e.type === 'reset')).toBe(false);
  expect(shownReply(entries)).toBe(String((job.result as { text: string }).text));
}, 150_000);
