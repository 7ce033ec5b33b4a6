import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { usePlatform } from '../support/platform.js';

/*
 * The Python client (clients/python, standard library only) against the real platform: the test
 * sets up a neuron on the scripted model and a pathway with a human step, then runs the client's own
 * script with python3, which invokes, streams through a cut connection, resumes after the end (204),
 * waits, executes the pathway, answers its intervention, searches, runs an experiment over a
 * dataset and checks the typed errors. Any failure there exits non-zero with its traceback.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const { app, llm } = usePlatform();

describe('the Python client', () => {
  it('invoke, stream, wait, execute, respond and search against the API', async () => {
    const ws = await buildWorkspace(app);
    const neuron = `py-helper-${ws.workspaceId.slice(0, 6)}`;
    const n = await app.post('/v1/neurons', ws.key, {
      name: neuron,
      description: 'Answers the Python client',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status, n.text).toBe(201);
    llm.setDefault(() => ({
      chunks: ['Hello', ' from', ' the', ' scripted', ' model'],
      delayMsPerChunk: 40,
      usage: { prompt_tokens: 4, completion_tokens: 5 },
    }));
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: `py-release-${ws.workspaceId.slice(0, 6)}`,
        pathway_graph: {
          nodes: [
            { id: 's', type: 'start' },
            { id: 'h', type: 'human', data: { title: 'Ship it?', prompt: 'Approve the release' } },
            { id: 'yes', type: 'output', data: { value: '"shipped"' } },
            { id: 'no', type: 'output', data: { value: '"held back"' } },
          ],
          edges: [
            { source: 's', target: 'h' },
            { source: 'h', target: 'yes', handle: 'approve' },
            { source: 'h', target: 'no', handle: 'reject' },
          ],
        },
      },
      ws.brainHeaders,
    );
    expect(p.status, p.text).toBe(201);

    const result = await run(
      'python3',
      ['clients/python/tests/run_against.py', app.url, ws.key, ws.brainId, neuron, String(p.body.id)],
      { cwd: root, timeout: 50_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } },
    ).catch((e: { code?: number; stdout?: string; stderr?: string }) => e);
    const out = `${result.stdout ?? ''}${result.stderr ?? ''}`;
    expect('code' in result ? result.code : 0, out).toBe(0);
    expect(out).toContain('all ok');
    for (const step of [
      'ok stream',
      'ok wait',
      'ok ended stream',
      'ok stream_reset',
      'ok pathway',
      'ok search',
      'ok evaluations',
      'ok errors',
    ])
      expect(out).toContain(step);
  }, 60_000);
});
