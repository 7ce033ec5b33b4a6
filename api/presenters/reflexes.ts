import type { z } from 'zod';
import type {
  NeuronReflexAssignment,
  NeuronReflexDoc,
  NeuronReflexSummary,
  Reflex,
  ReflexRecord as ReflexRow,
} from '../../src/reflexes/index.js';

/** Wire shape of a reflex; every field is listed so a new DB field never leaks. */
export function presentReflex(r: ReflexRow): z.input<typeof Reflex> {
  return {
    id: r._id,
    workspace_id: r.workspaceId,
    brain_id: r.brainId ?? null,
    name: r.name,
    type: r.type,
    description: r.description ?? '',
    tools: r.tools.map((t) => ({ integration_id: t.integrationId, tools: t.tools })),
    metadata: r.metadata,
    is_active: r.isActive,
    scope: r.scope,
    created_by: r.createdBy ?? null,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

/** A reflex as GET /v1/neurons/:id/reflexes lists it. */
export const presentNeuronReflex = (r: ReflexRow): z.input<typeof NeuronReflexSummary> => ({
  id: r._id,
  name: r.name,
  type: r.type,
  is_active: r.isActive,
  created_at: r.createdAt.toISOString(),
});

/** A neuron–reflex assignment. */
export const presentAssignment = (l: NeuronReflexDoc): z.input<typeof NeuronReflexAssignment> => ({
  neuron_id: l.neuronId,
  reflex_id: l.reflexId,
  created_at: l.createdAt.toISOString(),
});
