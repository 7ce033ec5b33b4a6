import type { z } from 'zod';
import type { StakeholderMapDoc, StakeholderVersionDoc } from '../../src/stakeholders/index.js';
import type { MapHead, VersionMeta } from '../../src/stakeholders/index.js';

/** Wire shape of a stakeholder map head; every field listed. */
export function presentStakeholderMap(m: StakeholderMapDoc): z.input<typeof MapHead> {
  return {
    id: m._id,
    kind: 'stakeholder_map',
    brain_id: m.brainId,
    name: m.name,
    description: m.description ?? null,
    is_default: m.isDefault,
    revision: m.revision,
    latest_version: m.latestVersion,
    counts: m.counts,
    summary: m.summary ?? '',
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
  };
}

/** Wire shape of a saved version's metadata (its graph is presented beside it). */
export function presentStakeholderVersion(v: StakeholderVersionDoc): z.input<typeof VersionMeta> {
  return {
    id: v._id,
    resource_id: v.mapId,
    version: v.version,
    label: v.label ?? null,
    revision: v.revision,
    counts: v.counts,
    created_by: v.createdBy ?? null,
    created_at: v.createdAt.toISOString(),
  };
}
