import { Job } from '../../src/jobs/schemas.js';
import type { TestClient } from './app.js';

/** Polls GET /v1/jobs/:id/status until the job is completed or failed (or the time is up) and returns it. */
export async function settleJob(app: TestClient, key: string, jobId: string, timeoutMs = 60_000, everyMs = 100) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}/status`, key)).body);
    if (job.status === 'completed' || job.status === 'failed' || Date.now() > until) return job;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
