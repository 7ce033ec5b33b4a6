import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { homedir } from 'node:os';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { replayOptions } from '../../worker/index.js';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';

const { app, llm } = usePlatform();
/** Histories recorded from earlier code: today's workflows must still replay them (runs in flight survive a deploy). */
const HISTORIES = fileURLToPath(new URL('./histories/', import.meta.url));

/** The history as the Temporal CLI exports it (the JSON form SDK replayers read). */
function exportHistory(workflowId: string): string {
  const cli = `${process.env.CORTEX_CACHE ?? `${homedir()}/.cache/cortex`}/bin/temporal`;
  return execFileSync(
    cli,
    ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', app.config.TEMPORAL_ADDRESS],
    { encoding: 'utf8' },
  );
}

/** Waits until the job reaches a terminal state through the public status route. */
async function finished(key: string, jobId: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const s = String((await app.get(`/v1/jobs/${jobId}/status`, key)).body.status);
    if (s === 'completed' || s === 'failed') return s;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('job did not finish');
}

/**
 * Determinism guard (workflows are deterministic; docs/architecture.md): histories recorded from real runs replay against the
 * current workflow code without a non-determinism error.
 */
describe('workflow replay', () => {
  it('replays a neuron run with a tool call and a delegation, a pathway run with a human node and a timer, and a map whose items run their turns locally', async () => {
    const ws = await buildWorkspace(app);
    const child = (
      await app.post('/v1/neurons', ws.key, {
        name: 'helper',
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: 'You are helper.' },
      })
    ).body as { id: string };
    const lead = (
      await app.post('/v1/neurons', ws.key, {
        name: 'lead',
        brain_id: ws.brainId,
        neuron_config: { model: 'openai/gpt-4o-mini', tools: ['calculator'], sub_neuron_ids: [child.id] },
      })
    ).body as { id: string };
    llm.setDefault((body) => {
      const system = String(body.messages.find((m) => m.role === 'system')?.content ?? '');
      if (system.includes('You are helper')) return { text: 'helped' };
      const tools = body.messages.filter((m) => m.role === 'tool').length;
      if (tools === 0) return { toolCalls: [{ name: 'calculator', arguments: { expression: '6 * 7' } }] };
      if (tools === 1) return { toolCalls: [{ name: 'delegate_helper', arguments: { message: 'help' } }] };
      return { chunks: ['all ', 'done'] };
    });
    const inv = await app.post(`/v1/neurons/${lead.id}/invoke`, ws.key, { message: 'go' });
    const neuronJob = String(inv.body.job_id);
    expect(await finished(ws.key, neuronJob)).toBe('completed');

    const p = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'replayed',
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 't', type: 'transform', data: { expression: 'input.n * 2' } },
            { id: 'd', type: 'delay', data: { ms: 50 } },
            { id: 'h', type: 'human', data: { title: 'ok?' } },
            { id: 'i', type: 'if', data: { condition: 'last.action = "approve"' } },
            { id: 'y', type: 'output', data: { value: '"yes"' } },
            { id: 'n', type: 'output', data: { value: '"no"' } },
          ],
          edges: [
            { source: 's', target: 't' },
            { source: 't', target: 'd' },
            { source: 'd', target: 'h' },
            { source: 'h', target: 'i' },
            { source: 'i', target: 'y', handle: 'true' },
            { source: 'i', target: 'n', handle: 'false' },
          ],
        },
      },
      ws.brainHeaders,
    );
    const ex = await app.post(
      `/v1/pathways/${String(p.body.id)}/execute`,
      ws.key,
      { input: { n: 2 } },
      ws.brainHeaders,
    );
    const pathwayJob = String(ex.body.job_id);
    let waitingFor: { interventionId?: string } | undefined;
    for (let i = 0; i < 200 && !waitingFor; i++) {
      const s = (await app.get(`/v1/jobs/${pathwayJob}/status`, ws.key)).body;
      if (s.status === 'waiting') waitingFor = s.waitingFor as { interventionId: string };
      else await new Promise((r) => setTimeout(r, 100));
    }
    await app.post(`/v1/interventions/${String(waitingFor?.interventionId)}/respond`, ws.key, { action: 'approve' });
    expect(await finished(ws.key, pathwayJob)).toBe('completed');

    // A map of two items: the items' model turns are local activities that claim their attempts.
    llm.setDefault(() => ({ chunks: ['item ', 'done'] }));
    const m = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'replayed-map',
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 'm', type: 'map', data: { items: 'input.items', neuron_id: child.id, message: 'do {{ item }}' } },
          ],
          edges: [{ source: 's', target: 'm' }],
        },
      },
      ws.brainHeaders,
    );
    const mapJob = String(
      (
        await app.post(
          `/v1/pathways/${String(m.body.id)}/execute`,
          ws.key,
          { input: { items: [1, 2] } },
          ws.brainHeaders,
        )
      ).body.job_id,
    );
    expect(await finished(ws.key, mapJob)).toBe('completed');
    const items = await app.get<{ jobs: { job_id: string }[] }>(`/v1/jobs?parent_job_id=${mapJob}`, ws.key);
    expect(items.body.jobs).toHaveLength(2);
    const itemHistory = await app.deps.temporal.client.workflow.getHandle(items.body.jobs[0].job_id).fetchHistory();
    // One workflow task, no activity task and one marker: prepare, the turn and the save are one
    // local activity (`runShort`) since the map records `map-item-one-step`.
    const events = itemHistory.events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    expect(events.filter((e) => e.markerRecordedEventAttributes)).toHaveLength(1);

    for (const [name, jobId] of [
      ['neuron-run', neuronJob],
      ['pathway-run', pathwayJob],
      // pathway-map.json and map-item.json were recorded before `map-item-one-step` (three markers an item).
      ['pathway-map-one-step', mapJob],
      ['map-item-one-step', items.body.jobs[0].job_id],
    ] as const) {
      const history = await app.deps.temporal.client.workflow.getHandle(jobId).fetchHistory();
      await expect(Worker.runReplayHistory(replayOptions(), history, jobId)).resolves.toBeUndefined();
      // RECORD_HISTORIES=1 refreshes the committed fixtures (only when a change is meant to break replay, behind wf.patched).
      const file = `${HISTORIES}${name}.json`;
      if (process.env.RECORD_HISTORIES === '1' || !existsSync(file)) writeFileSync(file, exportHistory(jobId));
    }
  }, 120_000);

  it('replays the histories recorded by earlier code (a deploy must not break runs in flight)', async () => {
    const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(2);
    for (const f of files) {
      const history: unknown = JSON.parse(readFileSync(`${HISTORIES}${f}`, 'utf8'));
      await expect(Worker.runReplayHistory(replayOptions(), history, f), f).resolves.toBeUndefined();
    }
  }, 120_000);
});
