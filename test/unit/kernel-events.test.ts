import { describe, expect, it } from 'vitest';
import { createBus } from '../../src/kernel/events.js';
import type { Scope } from '../../src/kernel/scope.js';

const scope: Scope = { workspaceId: 'w', userId: null, apiKeyId: null, roles: [], credential: 'system' };

describe('the kernel event bus', () => {
  it('calls subscribers one after another in the order they subscribed, and awaits each', async () => {
    const bus = createBus();
    const seen: string[] = [];
    bus.on('pathway.removed', async ({ pathwayId }) => {
      await new Promise((r) => setTimeout(r, 5));
      seen.push(`a:${pathwayId}`);
    });
    bus.on('pathway.removed', ({ pathwayId }) => void seen.push(`b:${pathwayId}`));
    await bus.emit('pathway.removed', { scope, pathwayId: 'p1' });
    expect(seen).toEqual(['a:p1', 'b:p1']);
  });

  it('rejects with the first failure and skips the subscribers after it', async () => {
    const bus = createBus();
    const seen: string[] = [];
    bus.on('neuron.removing', () => {
      throw new Error('links');
    });
    bus.on('neuron.removing', () => void seen.push('receptors'));
    await expect(bus.emit('neuron.removing', { scope, neuronId: 'n' })).rejects.toThrow('links');
    expect(seen).toEqual([]);
  });

  it('with onError, tells each failure and still calls the rest', async () => {
    const bus = createBus();
    const errors: string[] = [];
    const seen: string[] = [];
    bus.on('stimulus', () => Promise.reject(new Error('first')));
    bus.on('stimulus', ({ key }) => void seen.push(key));
    await bus.emit(
      'stimulus',
      { workspaceId: 'w', key: 'vault.asset.created', eventId: 'e', payload: {} },
      { onError: (e) => errors.push((e as Error).message) },
    );
    expect(errors).toEqual(['first']);
    expect(seen).toEqual(['vault.asset.created']);
  });

  it('resolves at once without subscribers; a request without a handler answers undefined', async () => {
    const bus = createBus();
    await expect(bus.emit('pathway.activity', { scope, pathwayId: 'p', isActive: true })).resolves.toBeUndefined();
    const job = { _id: 'j' } as Parameters<typeof bus.request<'job.restart'>>[1];
    expect(await bus.request('job.restart', job)).toBeUndefined();
    bus.handle('job.restart', async (j) => j._id === 'j');
    expect(await bus.request('job.restart', job)).toBe(true);
    expect(() => bus.handle('job.restart', async () => false)).toThrow(/already has a handler/);
  });
});
