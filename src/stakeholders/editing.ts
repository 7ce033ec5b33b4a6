import { randomUUID } from 'node:crypto';
import type { StakeholderMap, StakeholderRevision, StakeholderVersion } from './model.js';
import { conflict } from '../kernel/errors.js';
import type { Changes, Interaction, StakeholderOp } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import { applyOps, countsOf, emptyGraph, type Graph } from './graph.js';
import type { MapReads, StakeholderMapDeps } from './service-common.js';

/** Live-graph revisions kept per map (older ones are pruned; saved versions are kept for good). */
const REVISIONS_KEPT = 10;

/** Changing a map's live graph (claimed revisions) and saving versions of it. */
export function createMapEditing(d: StakeholderMapDeps, reads: MapReads) {
  const { repo } = d;
  const { ref } = reads;

  /**
   * Applies ops as the next revision of the live graph: the new body is stored and the revision
   * number claimed (the repository's claim); a writer that loses the claim re-applies its ops to
   * the newer graph. `opKey` makes a retried change (an extraction job) apply once;
   * `baseRevision` refuses a stale writer with 409.
   */
  async function commit(
    m: StakeholderMap,
    ops: StakeholderOp[],
    o: { by: string | null; source: Interaction['source']; opKey?: string; baseRevision?: number },
  ) {
    const applied = async () => (o.opKey ? repo.revisionWithOpKey(m, o.opKey) : null);
    const done = await applied();
    if (done) return settle(m, done, null);
    for (let tries = 0; tries < 100; tries++) {
      const prev = await repo.newestRevision(m);
      const revision = (prev?.revision ?? 0) + 1;
      if (o.baseRevision !== undefined && o.baseRevision !== revision - 1)
        throw conflict(`the live graph is at revision ${revision - 1}, not ${o.baseRevision}`);
      const now = new Date();
      const out = applyOps(prev ? await repo.graph(m, prev.graphId) : emptyGraph(), ops, {
        now: now.toISOString(),
        newId: randomUUID,
        source: o.source,
      });
      const rev = await repo.claimRevision(
        m,
        { revision, counts: countsOf(out.graph), opKey: o.opKey ?? null, createdBy: o.by, createdAt: now },
        out.graph,
      );
      if (rev) return settle(m, rev, out);
      const meanwhile = await applied();
      if (meanwhile) return settle(m, meanwhile, null);
    }
    throw new Error('could not claim the next stakeholder map revision after 100 tries');
  }

  /** After a claimed revision: the head, where each stakeholder lives, pruning, and the event. */
  async function settle(m: StakeholderMap, rev: StakeholderRevision, own: { graph: Graph; changes: Changes } | null) {
    const g = own?.graph ?? (await repo.graph(m, rev.graphId));
    await repo.advanceHead(m, rev.revision, {
      counts: countsOf(g),
      summary: g.summary.slice(0, 2000),
      updatedAt: rev.createdAt,
    });
    const touched = own ? new Set([...own.changes.added.stakeholders, ...own.changes.updated.stakeholders]) : null;
    await repo.placeStakeholders(
      m,
      g.stakeholders.filter((s) => !touched || touched.has(s.id)),
    );
    await repo.pruneRevisions(m, rev.revision - REVISIONS_KEPT);
    await d.events.emit(m.workspaceId, 'updated', ref(m));
    const none = { stakeholders: [], interactions: [], edges: [], risks: [] };
    return {
      revision: rev.revision,
      changes: own?.changes ?? { added: none, updated: none, removed: none, summary_changed: false },
      graph: g,
    };
  }

  /** Records the live graph (as it is now) as the map's next version number. */
  async function saveVersion(scope: Scope, m: StakeholderMap, label: string | undefined): Promise<StakeholderVersion> {
    const cur = await reads.live(m);
    const v = await repo.claimNextVersion(m, cur.graph, {
      label: label ?? null,
      revision: cur.revision,
      counts: countsOf(cur.graph),
      createdBy: reads.by(scope),
      createdAt: new Date(),
    });
    await repo.advanceLatestVersion(m, v.version, v.createdAt);
    await d.events.emit(m.workspaceId, 'updated', { ...ref(m), version: v.version });
    return v;
  }

  return { commit, saveVersion };
}
export type MapEditing = ReturnType<typeof createMapEditing>;
