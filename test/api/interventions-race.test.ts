import { describe, expect, it } from 'vitest';
import { Intervention } from '../../src/interventions/schemas.js';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';
import { settleJob } from '../support/jobs.js';

/**
 * Human answers are atomic (Temporal Update with a validator): two answers racing each other,
 * or an answer racing the expiry timer, have exactly one outcome, and the intervention record,
 * the job and the branch the run took always agree.
 */
const { app } = usePlatform();
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

const graph = (human: Record<string, unknown>) => ({
  nodes: [
    { id: 's', type: 'start' },
    { id: 'h', type: 'human', data: { title: 'ok?', ...human } },
    { id: 'y', type: 'output', data: { value: '"approved"' } },
    { id: 'n', type: 'output', data: { value: '"rejected"' } },
  ],
  edges: [
    { source: 's', target: 'h' },
    { source: 'h', target: 'y', handle: 'approve' },
    { source: 'h', target: 'n', handle: 'reject' },
  ],
});

async function startWaiting(ws: Ws, human: Record<string, unknown> = {}) {
  const res = await app.post('/v1/jobs', ws.key, { pathway: graph(human) }, ws.brainHeaders);
  expect(res.status).toBe(200);
  const jobId = String(res.body.job_id);
  for (let i = 0; i < 200; i++) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, ws.key)).body);
    if (job.status === 'waiting') return { jobId, interventionId: String(job.waitingFor!.interventionId) };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the run never waited');
}

const settled = (ws: Ws, jobId: string) => settleJob(app, ws.key, jobId, 15_000, 50);

describe('atomic human answers', () => {
  it('two different answers sent at once through two routes: one is accepted, the other refused, and record, job and branch agree', async () => {
    const ws = await buildWorkspace(app);
    for (let round = 0; round < 3; round++) {
      const { jobId, interventionId } = await startWaiting(ws);
      const token = (
        await app.services.interventions.get(await app.services.auth.authenticate(ws.key), interventionId)
      ).deliveries.find((d) => d.channel === 'link')!.token;
      const [viaRespond, viaToken] = await Promise.all([
        app.post(`/v1/interventions/${interventionId}/respond`, ws.key, { action: 'approve' }),
        app.post(`/v1/public/interventions/${token}/respond`, undefined, { action: 'reject' }),
      ]);
      const statuses = [viaRespond.status, viaToken.status].sort();
      expect(statuses).toEqual([200, 409]);
      const loser = viaRespond.status === 409 ? viaRespond : viaToken;
      expect(loser.body).toMatchObject({ code: 'CONFLICT' });
      expect(String(loser.body.message), JSON.stringify([viaRespond.body, viaToken.body])).toMatch(
        /already (approved|rejected)/,
      );
      const winner = viaRespond.status === 200 ? 'approve' : 'reject';
      const record = Intervention.parse((await app.get(`/v1/interventions/${interventionId}`, ws.key)).body);
      expect(record.status).toBe(winner === 'approve' ? 'approved' : 'rejected');
      const job = await settled(ws, jobId);
      expect(job.status).toBe('completed');
      expect(job.result).toMatchObject({ output: winner === 'approve' ? 'approved' : 'rejected' });
    }
  });

  it('an answer racing the expiry timer has one outcome: accepted and run on, or refused and expired', async () => {
    const ws = await buildWorkspace(app);
    const outcomes: string[] = [];
    for (let round = 0; round < 4; round++) {
      const { jobId, interventionId } = await startWaiting(ws, { expires_in_s: 1 });
      const waitingSince = Date.now();
      // Aim around the deadline: some answers land just before it, some just after.
      await new Promise((r) => setTimeout(r, Math.max(0, 850 + round * 100 - (Date.now() - waitingSince))));
      const answer = await app.post(`/v1/interventions/${interventionId}/respond`, ws.key, { action: 'approve' });
      const job = await settled(ws, jobId);
      const record = Intervention.parse((await app.get(`/v1/interventions/${interventionId}`, ws.key)).body);
      if (answer.status === 200) {
        expect(record.status).toBe('approved');
        expect(job.status).toBe('completed');
        outcomes.push('answered');
      } else {
        expect(answer.status).toBe(409);
        expect(record.status).toBe('expired');
        expect(job.status).toBe('failed');
        expect(job.failedReason).toMatch(/expired/);
        outcomes.push('expired');
      }
    }
    expect(outcomes).toHaveLength(4);
  }, 120_000);
});
