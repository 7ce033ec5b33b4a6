import { afterAll, describe, expect, it } from 'vitest';
import { Receptor, SchedulePreview } from '../../src/receptors/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * POST /v1/schedules/preview (docs/receptors.md, "Preview before saving"): the next fire times of a
 * timing that is not saved, computed by Temporal. Checked against the real Temporal server: a cron in
 * a time zone across a DST change, an interval with an offset, the very times a saved receptor with
 * the same timing then shows, the 400s naming the field, and no schedule left behind.
 */
const { app } = useSimPlatform({ firstTokenMs: 20, interTokenMs: 5, tokens: 3 });
const saved: string[] = [];
afterAll(async () => {
  for (const id of saved) await app.services.schedules.remove(id).catch(() => undefined);
});

async function previewSchedules(): Promise<string[]> {
  const ids: string[] = [];
  for await (const s of app.deps.temporal.client.schedule.list())
    if (s.scheduleId.startsWith('receptor-preview-')) ids.push(s.scheduleId);
  return ids;
}

describe('POST /v1/schedules/preview', () => {
  it('computes a cron in a time zone across a DST change, as Temporal fires it', async () => {
    const ws = await buildWorkspace(app);
    // 09:00 in New York from 12 March 2027: DST starts on Sunday 14 March (EST UTC-5, then EDT UTC-4).
    const res = await app.post('/v1/schedules/preview', ws.key, {
      timing: { cron: '0 9 * * *', timezone: 'America/New_York', start_at: '2027-03-12T00:00:00Z' },
      count: 4,
    });
    expect(res.status).toBe(200);
    expect(SchedulePreview.parse(res.body)).toEqual({
      timezone: 'America/New_York',
      next_fire_times: [
        '2027-03-12T14:00:00.000Z',
        '2027-03-13T14:00:00.000Z',
        '2027-03-14T13:00:00.000Z',
        '2027-03-15T13:00:00.000Z',
      ],
    });
    // @-forms and several expressions are Temporal's dialect too; end_at bounds the list.
    const weekly = SchedulePreview.parse(
      (
        await app.post('/v1/schedules/preview', ws.key, {
          timing: {
            cron: ['@weekly', '30 12 1 * *'],
            start_at: '2027-01-01T00:00:00Z',
            end_at: '2027-01-20T00:00:00Z',
          },
          count: 50,
        })
      ).body,
    );
    expect(weekly.next_fire_times).toEqual([
      '2027-01-01T12:30:00.000Z',
      '2027-01-03T00:00:00.000Z',
      '2027-01-10T00:00:00.000Z',
      '2027-01-17T00:00:00.000Z',
    ]);
  });

  it('an interval with an offset, from now, and the default count of five', async () => {
    const ws = await buildWorkspace(app);
    const before = Date.now();
    const res = await app.post('/v1/schedules/preview', ws.key, {
      timing: { interval: { every: '1h', offset: '15m' } },
    });
    expect(res.status).toBe(200);
    const times = SchedulePreview.parse(res.body).next_fire_times.map((t) => Date.parse(t));
    expect(times).toHaveLength(5);
    expect(times[0]).toBeGreaterThan(before);
    expect(times[0]! - before).toBeLessThanOrEqual(3600_000);
    for (const t of times) expect(new Date(t).getUTCMinutes()).toBe(15);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(3600_000);
  });

  it('previews exactly the times the saved receptor then shows', async () => {
    const ws = await buildWorkspace(app);
    const timing = { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', start_at: '2027-06-01T00:00:00Z' };
    const preview = SchedulePreview.parse(
      (await app.post('/v1/schedules/preview', ws.key, { timing, count: 6 })).body,
    ).next_fire_times;
    expect(preview).toHaveLength(6);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'weekday',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim' },
    });
    expect(n.status).toBe(201);
    const sub = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'schedule',
      name: 'weekday digest',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: n.body.id },
      timing,
    });
    expect(sub.status).toBe(201);
    const r = Receptor.parse(sub.body);
    saved.push(r.id);
    const view = Receptor.parse((await app.get(`/v1/receptors/${ws.workspaceId}/${r.id}?preview=6`, ws.key)).body);
    expect(view.schedule?.next_fire_times).toEqual(preview);
  });

  it('a workspace has its share of previews under way (429 past it, another workspace unhindered); the same timing again is answered alike', async () => {
    const [ws, other] = [await buildWorkspace(app), await buildWorkspace(app)];
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        app.post('/v1/schedules/preview', ws.key, {
          timing: { cron: `${i} 7 * * *`, timezone: 'Asia/Tokyo' },
          count: 2,
        }),
      ),
    );
    const beside = await app.post('/v1/schedules/preview', other.key, { timing: { interval: 90 }, count: 2 });
    expect(beside.status).toBe(200);
    for (const r of burst) expect([200, 429], JSON.stringify(r.body)).toContain(r.status);
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.body).toMatchObject({ code: 'RATE_LIMIT' });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // Asked again one by one, every timing is answered.
    for (let i = 0; i < 8; i++) {
      const r = await app.post('/v1/schedules/preview', ws.key, {
        timing: { cron: `${i} 7 * * *`, timezone: 'Asia/Tokyo' },
        count: 2,
      });
      expect(r.status).toBe(200);
      const times = SchedulePreview.parse(r.body).next_fire_times;
      expect(times).toHaveLength(2);
      for (const t of times) expect(new Date(t).getUTCMinutes()).toBe(i);
    }
    const again = await app.post('/v1/schedules/preview', ws.key, { timing: { interval: 90 }, count: 2 });
    expect(again.body).toEqual(beside.body);
  });

  it('PATCH with only a timing changes the schedule and keeps its activation, keys and payload; a bad one changes nothing', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'patched',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim' },
    });
    expect(n.status).toBe(201);
    const sub = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'schedule',
      name: 'patched digest',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: n.body.id },
      timing: { cron: '0 9 * * *', timezone: 'Europe/Berlin' },
      payload: { message: 'the digest' },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const r = Receptor.parse(sub.body);
    saved.push(r.id);
    const url = `/v1/receptors/${ws.workspaceId}/${r.id}`;
    const before = (await app.get(url, ws.key)).body as { source_config: Record<string, unknown> };
    const patched = await app.patch(url, ws.key, {
      source_config: { timing: { cron: '30 10 * * *', timezone: 'Asia/Tokyo' } },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const view = Receptor.parse((await app.get(`${url}?preview=2`, ws.key)).body);
    const after = (await app.get(url, ws.key)).body as { source_config: Record<string, unknown> };
    expect(after.source_config.activation).toBe('schedule');
    expect(after.source_config.payload).toEqual(before.source_config.payload);
    expect(after.source_config.stimulus_keys).toEqual(before.source_config.stimulus_keys);
    expect(view.schedule?.cron).toEqual(['30 10 * * *']);
    expect(view.schedule?.timezone).toBe('Asia/Tokyo');
    for (const t of view.schedule?.next_fire_times ?? []) expect(new Date(t).getUTCHours()).toBe(1);
    // A timing the engine refuses is a 400 naming it, and the stored schedule stays.
    const bad = await app.patch(url, ws.key, { source_config: { timing: { cron: '61 * * * *' } } });
    expect(bad.status).toBe(400);
    expect(String(bad.body.message)).toMatch(/timing/);
    expect(Receptor.parse((await app.get(url, ws.key)).body).schedule?.cron).toEqual(['30 10 * * *']);
  });

  it('refuses a bad spec with a 400 naming the field, leaves no schedule behind, and needs a credential', async () => {
    const ws = await buildWorkspace(app);
    const bad = await app.post('/v1/schedules/preview', ws.key, { timing: { cron: '61 * * * *' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(String(bad.body.message)).toMatch(/^timing/);
    const zone = await app.post('/v1/schedules/preview', ws.key, {
      timing: { cron: '0 9 * * *', timezone: 'Mars/Base' },
    });
    expect(zone.status).toBe(400);
    expect(String(zone.body.message)).toMatch(/timing\.timezone/);
    const none = await app.post('/v1/schedules/preview', ws.key, { timing: {} });
    expect(none.status).toBe(400);
    expect(String(none.body.message)).toMatch(/cron or interval/);
    const many = await app.post('/v1/schedules/preview', ws.key, { timing: { interval: 60 }, count: 51 });
    expect(many.status).toBe(400);
    expect(String(many.body.message)).toMatch(/count/);
    expect((await app.post('/v1/schedules/preview', '', { timing: { interval: 60 } })).status).toBe(401);
    // Every preview schedule was deleted (the list is eventually consistent: wait for it to settle).
    await expect.poll(previewSchedules, { timeout: 15_000, interval: 500 }).toEqual([]);
  });
});
