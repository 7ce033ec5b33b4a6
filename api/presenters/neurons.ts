import type { z } from 'zod';
import type {
  NeuronRecord as NeuronRow,
  NeuronVersionRecord as NeuronVersionRow,
  Neuron,
  NeuronList,
  NeuronVersion,
  NeuronVersionList,
  NeuronVersionSummary,
  NeuronPage,
  NeuronVersionView,
  NeuronView,
} from '../../src/neurons/index.js';
import { presentPage } from './page.js';

/** Wire shape of a neuron (head or a version's body); every field is listed so a new DB field never leaks. */
export function presentNeuron(v: NeuronView): z.input<typeof Neuron> {
  const { doc, body } = v;
  return {
    id: doc._id,
    workspace_id: doc.workspaceId,
    brain_id: body.brainId,
    name: body.name,
    description: body.description,
    neuron_config: body.neuron_config,
    is_active: body.is_active,
    scope: body.scope,
    version: body.version,
    latest_version: doc.version,
    attached: v.attached,
    redacted: v.redacted,
    // `?? null`: FerretDB 1.x may return a stored null as a missing field.
    created_by: doc.createdBy ?? null,
    created_at: doc.createdAt.toISOString(),
    updated_at: v.bodyAt.toISOString(),
    deleted_at: doc.deletedAt?.toISOString() ?? null,
  };
}

/** One line of a neuron's version history. */
function presentNeuronVersionSummary(v: NeuronVersionRow): z.input<typeof NeuronVersionSummary> {
  return {
    version: v.version,
    created_at: v.createdAt.toISOString(),
    name: v.snapshot?.name ?? '',
    is_active: v.snapshot?.is_active ?? false,
    created_by: v.createdBy ?? null,
    note: v.note ?? null,
  };
}

/** A stored version with its body snapshot (redacted for core neurons when the caller lacks core_admin). */
export function presentNeuronVersion(v: NeuronVersionView): z.input<typeof NeuronVersion> {
  const s = v.snapshot;
  return {
    neuron_id: v.doc.neuronId,
    version: v.doc.version,
    created_at: v.doc.createdAt.toISOString(),
    created_by: v.doc.createdBy ?? null,
    note: v.doc.note ?? null,
    redacted: v.redacted,
    snapshot: {
      id: s.id,
      name: s.name,
      description: s.description,
      brain_id: s.brainId,
      neuron_config: s.neuron_config,
      is_active: s.is_active,
      scope: s.scope,
    },
  };
}

/** A list page: `{ neurons, total, limit, offset, has_more }`. */
export const presentNeuronPage = (p: NeuronPage): z.input<typeof NeuronList> => ({
  neurons: p.items.map(presentNeuron),
  ...presentPage(p),
});

/** Version history, newest first. */
export const presentNeuronHistory = (h: {
  doc: NeuronRow;
  versions: NeuronVersionRow[];
}): z.input<typeof NeuronVersionList> => ({
  neuron_id: h.doc._id,
  latest_version: h.doc.version,
  versions: h.versions.map(presentNeuronVersionSummary),
});
