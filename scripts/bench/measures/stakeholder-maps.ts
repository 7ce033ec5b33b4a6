import type { TestApp } from '../../../test/support/app.js';

/**
 * Bench section (f), stakeholder maps (docs/stakeholder-maps.md): every patch writes the whole
 * graph as the next revision, so what a patch, a live read, a diff and a briefing cost is
 * measured on a small map and on one at the size caps (1,000 stakeholders, 5,000 interactions).
 */
export interface StakeholderMapFigures {
  graphBytes: number;
  small: { patchMs: number };
  full: { patchMs: number; liveReadMs: number; diffMs: number; briefingMs: number };
}

const RUNS = 10;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timed(n: number, fn: (i: number) => Promise<{ status: number; text: string }>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await fn(i);
    ms.push(performance.now() - t);
    if (r.status !== 200) throw new Error(`stakeholder map bench call answered ${r.status}: ${r.text.slice(0, 200)}`);
  }
  return median(ms);
}

export async function measureStakeholderMaps(
  app: TestApp,
  ws: { key: string; brainId: string },
): Promise<StakeholderMapFigures> {
  const h = { 'x-brain-id': ws.brainId };
  const mapOf = async (name: string) =>
    String((await app.post('/v1/resources/stakeholder_maps', ws.key, { name }, h)).body.id);
  const patch = (id: string, body: unknown) => app.post(`/v1/resources/stakeholder_map/${id}/patch`, ws.key, body, h);
  const oneOp = (id: string) => (i: number) =>
    patch(id, {
      ops: [
        {
          op: 'add_interaction',
          summary: `bench call ${i}`,
          participants: ['Person 1', 'Person 2'],
          sentiment: 'neutral',
        },
      ],
    });

  const small = await mapOf('bench small');
  await patch(small, {
    ops: Array.from({ length: 10 }, (_, i) => ({
      op: 'add_interaction',
      summary: `seed ${i}`,
      participants: [`Person ${i}`, `Person ${(i + 1) % 10}`],
    })),
  });
  const smallPatch = await timed(RUNS, oneOp(small));

  // Fill a map to the caps, 500 ops per patch (the most a patch takes).
  const full = await mapOf('bench full');
  const people = 1000;
  for (let from = 0; from < people; from += 500) {
    await patch(full, {
      ops: Array.from({ length: 500 }, (_, k) => ({
        op: 'upsert_stakeholder',
        name: `Person ${from + k}`,
        role: 'Role',
        organization: 'Org',
        influence: 'medium',
        stance: 'neutral',
      })),
    });
  }
  const interactions = 5000 - RUNS - 1;
  for (let from = 0; from < interactions; from += 500) {
    const n = Math.min(500, interactions - from);
    await patch(full, {
      ops: Array.from({ length: n }, (_, k) => ({
        op: 'add_interaction',
        summary: `Discussed item ${from + k} of the rollout plan with the group`,
        participants: [`Person ${(from + k) % people}`, `Person ${(from + k + 7) % people}`],
        sentiment: (from + k) % 3 === 0 ? 'negative' : 'positive',
        topics: ['rollout', 'budget'],
      })),
    });
  }
  await app.post('/v1/stakeholder-map/versions', ws.key, { resource_id: full }, h);
  const fullPatch = await timed(RUNS, oneOp(full));
  const liveRead = await timed(RUNS, () =>
    app.get(`/v1/resources/stakeholder_maps/live?resource_id=${full}`, ws.key, h),
  );
  const diff = await timed(RUNS, () =>
    app.get(`/v1/resources/stakeholder_maps/diff?resource_id=${full}&from=1&to=live`, ws.key, h),
  );
  const live = await app.get<{ stakeholders: { id: string }[] }>(
    `/v1/resources/stakeholder_maps/live?resource_id=${full}`,
    ws.key,
    h,
  );
  const someone = live.body.stakeholders[0].id;
  const briefing = await timed(RUNS, () => app.get(`/v1/stakeholders/briefing/${someone}`, ws.key, h));
  const rev = await app.deps.db
    .collection('stakeholder_map_revisions')
    .find({ mapId: full })
    .sort({ revision: -1 })
    .limit(1)
    .next();
  const body = await app.deps.db
    .collection<{ _id: string; graph: string }>('stakeholder_map_graphs')
    .findOne({ _id: String(rev?.graphId) });
  return {
    graphBytes: body?.graph.length ?? 0,
    small: { patchMs: smallPatch },
    full: { patchMs: fullPatch, liveReadMs: liveRead, diffMs: diff, briefingMs: briefing },
  };
}

export function formatStakeholderMaps(f: StakeholderMapFigures, fmt: (ms: number) => string): string[] {
  return [
    `  (f) Stakeholder maps, medians of ${RUNS} sequential calls`,
    `      one-op patch, 10-person map            ${fmt(f.small.patchMs).padStart(7)} ms`,
    `      at the caps (1,000 people, 5,000 interactions; one revision ${(f.graphBytes / 1e6).toFixed(1)} MB):`,
    `        one-op patch ${fmt(f.full.patchMs)} ms | live read ${fmt(f.full.liveReadMs)} ms | diff v1→live ${fmt(f.full.diffMs)} ms | briefing ${fmt(f.full.briefingMs)} ms`,
  ];
}
