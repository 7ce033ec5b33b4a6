import { describe, expect, it } from 'vitest';
import { buildWorkspace, useTestApp } from '../support/app.js';
import { dataOf, readSse } from '../support/sse.js';

const app = useTestApp();

describe('the resource event stream', () => {
  it('every create, update and delete of neurons, pathways, receptors and reflexes appends one event; after= resumes; another workspace sees none', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, { name: 'evented', brain_id: ws.brainId });
    await app.put(`/v1/neurons/${String(n.body.id)}`, ws.key, { description: 'changed' });
    const p = await app.post('/v1/pathways', ws.key, { name: 'evented flow' }, ws.brainHeaders);
    const r = await app.post('/v1/reflexes', ws.key, {
      name: 'evented tools',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: { handler: 'calculator' },
    });
    await app.del(`/v1/reflexes/${String(r.body.id)}`, ws.key);
    await app.del(`/v1/pathways/${String(p.body.id)}`, ws.key, ws.brainHeaders);
    await app.post('/v1/neurons', other.key, { name: 'elsewhere', brain_id: other.brainId });

    const headers = { authorization: `Bearer ${ws.key}` };
    const wanted = 9;
    const sse = await readSse(`${app.url}/v1/resource-events/stream`, {
      headers,
      until: (ev) => ev.length >= wanted,
      timeoutMs: 10_000,
    });
    const events = sse.events.map(dataOf) as {
      action: string;
      resource: { kind: string; id: string; name?: string };
    }[];
    const seen = events.map((e) => `${e.resource.kind}:${e.action}`);
    expect(seen).toEqual([
      'neuron:created',
      'receptor:created',
      'neuron:updated',
      'pathway:created',
      'receptor:created',
      'reflex:created',
      'reflex:deleted',
      'pathway:deleted',
      'receptor:deleted',
    ]);
    expect(events.every((e) => e.resource.id)).toBe(true);
    expect(events.some((e) => e.resource.name === 'elsewhere')).toBe(false);
    // Resume after the third event: exactly the rest.
    const cursor = sse.events[2].id;
    const rest = await readSse(`${app.url}/v1/resource-events/stream?after=${cursor}`, {
      headers,
      until: (ev) => ev.length >= sse.events.length - 3,
      timeoutMs: 10_000,
    });
    expect(rest.events.map((e) => e.id)).toEqual(sse.events.slice(3).map((e) => e.id));
    expect((await app.get('/v1/resource-events/stream?after=nope', ws.key)).status).toBe(400);
  });
});
