/**
 * Deleting a workspace is durable (docs/operations.md, "Deleting a workspace"): a worker that goes
 * away half-way leaves the deletion running, and the next worker finishes it from where it was.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildWorkspace, useTestApp } from '../support/app.js';
import { startTestWorker } from '../support/worker.js';

const OPERATOR_TOKEN = 'operator-token-0123456789abcdef-0123456789';
// Small batches: the store step takes many parts.
const app = useTestApp({ OPERATOR_TOKEN, RETENTION_BATCH: 20 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('workspace deletion', () => {
  it('resumes after the worker goes away and finishes with nothing left', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const rows = (workspaceId: string) =>
      Array.from({ length: 600 }, (_, i) => ({ _id: randomUUID(), workspaceId, i, createdAt: new Date() }));
    await app.deps.db
      .collection('interventions')
      .insertMany([...rows(ws.workspaceId), ...rows(other.workspaceId)] as never[]);

    // No worker yet: the deletion is stored and its workflow waits.
    const del = await app.del(`/v1/operator/workspaces/${ws.workspaceId}`, OPERATOR_TOKEN);
    expect(del.status, del.text).toBe(202);
    const id = String(del.body.id);
    const progress = async () => (await app.get(`/v1/operator/workspace-deletions/${id}`, OPERATOR_TOKEN)).body;

    const first = await startTestWorker(app);
    let p = await progress();
    for (
      let i = 0;
      i < 300 && !(p.current_step === 'store' && Number((p.deleted as Record<string, number>).interventions ?? 0) > 0);
      i++
    ) {
      await sleep(20);
      p = await progress();
    }
    await first.stop();
    p = await progress();
    expect(p.status).toBe('running');
    const leftHalfway = await app.deps.db.collection('interventions').countDocuments({ workspaceId: ws.workspaceId });
    expect(leftHalfway).toBeGreaterThan(0);

    const second = await startTestWorker(app);
    try {
      for (let i = 0; i < 600 && p.status === 'running'; i++) {
        await sleep(100);
        p = await progress();
      }
    } finally {
      await second.stop();
    }
    expect(p).toMatchObject({ status: 'completed', progress: 100 });
    expect(await app.deps.db.collection('interventions').countDocuments({ workspaceId: ws.workspaceId })).toBe(0);
    expect(await app.deps.db.collection('workspaces').countDocuments({ _id: ws.workspaceId } as never)).toBe(0);
    // The other workspace keeps every row.
    expect(await app.deps.db.collection('interventions').countDocuments({ workspaceId: other.workspaceId })).toBe(600);
    // A deletion of a workspace that is gone is a 404; a tenant key is no operator credential.
    expect((await app.del(`/v1/operator/workspaces/${ws.workspaceId}`, OPERATOR_TOKEN)).status).toBe(404);
    expect((await app.get(`/v1/operator/workspace-deletions/${id}`, other.key)).status).toBe(401);
  });
});
