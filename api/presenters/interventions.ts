import type { z } from 'zod';
import type { DeliveryDoc, InterventionRecord, Delivery, Intervention } from '../../src/interventions/index.js';

/** Delivery tokens are shown to authenticated workspace members only; the public view never lists other deliveries. */
const presentDelivery = (d: DeliveryDoc, withToken: boolean): z.input<typeof Delivery> => ({
  id: d.id,
  channel: d.channel,
  status: d.status,
  created_at: d.createdAt.toISOString(),
  responded_at: d.respondedAt?.toISOString() ?? null,
  ...(withToken ? { token: d.token, url: `/v1/public/interventions/${d.token}`, page_url: `/approve/${d.token}` } : {}),
});

/** Wire shape of an intervention record with its deliveries. */
export function presentIntervention(
  i: InterventionRecord,
  opts: { tokens: boolean } = { tokens: true },
): z.input<typeof Intervention> {
  return {
    id: i._id,
    workspace_id: i.workspaceId,
    brain_id: i.brainId ?? null,
    job_id: i.jobId,
    trace_id: i.traceId ?? null,
    pathway_id: i.pathwayId ?? null,
    node_index: i.nodeIndex,
    kind: i.kind,
    title: i.title,
    prompt: i.prompt,
    options: i.options,
    status: i.status,
    action: i.action ?? null,
    comment: i.comment ?? null,
    fields: i.fields,
    // Only interventions that carry one (a tool call): other reads are as they were.
    ...(i.payload ? { payload: i.payload } : {}),
    responded_by: i.respondedBy ?? null,
    responded_at: i.respondedAt?.toISOString() ?? null,
    expires_at: i.expiresAt?.toISOString() ?? null,
    deliveries: i.deliveries.map((d) => presentDelivery(d, opts.tokens)),
    created_at: i.createdAt.toISOString(),
    updated_at: i.updatedAt.toISOString(),
  };
}

/** The unauthenticated view of one delivery (GET /v1/public/interventions/:token). */
export function presentPublicDelivery(i: InterventionRecord, deliveryId: string) {
  const d = i.deliveries.find((x) => x.id === deliveryId)!;
  return {
    intervention: {
      id: i._id,
      kind: i.kind,
      title: i.title,
      prompt: i.prompt,
      options: i.options,
      ...(i.payload ? { payload: i.payload } : {}),
      status: i.status,
      action: i.action ?? null,
      created_at: i.createdAt.toISOString(),
      expires_at: i.expiresAt?.toISOString() ?? null,
      responded_at: i.respondedAt?.toISOString() ?? null,
    },
    delivery: presentDelivery(d, false),
  };
}
