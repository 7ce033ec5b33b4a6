import type { z } from 'zod';
import {
  fromTiming,
  type ChannelBinding,
  type ChannelBindingRecord as ChannelBindingRow,
  type Page,
  type Receptor,
  type ReceptorList,
  type ReceptorView,
} from '../../src/receptors/index.js';
import { presentPage } from './page.js';

/** Wire shape of a receptor; every field is listed so a new DB field never leaks. */
export function presentReceptor({
  doc: r,
  schedule,
}: {
  doc: ReceptorView['doc'];
  schedule?: ReceptorView['schedule'];
}): z.input<typeof Receptor> {
  const t = r.executableTarget;
  const source = r.sourceConfig;
  return {
    id: r._id,
    slug: r.slug,
    workspace_id: r.workspaceId,
    brain_id: r.brainId,
    active_channels: r.activeChannels,
    config: r.config,
    is_active: r.isActive,
    scope: r.scope,
    source_config: {
      ...source,
      ...(r.activation ? { activation: r.activation, stimulus_keys: r.stimulusKeys ?? [] } : {}),
      ...(r.timing ? { timing: fromTiming(r.timing) } : {}),
    },
    executable_target: {
      kind: t.kind,
      id: t.id ?? null,
      ...(t.kind === 'action_plan' ? { auto_execute: Boolean(t.autoExecute) } : {}),
      ...(t.kind === 'system_job' ? { job: t.job ?? null } : {}),
    },
    sensory_reflex_id: r.sensoryReflexId ?? null,
    target_type: t.kind,
    origin: r.origin ?? 'target',
    // A single read carries the live schedule view (null without a schedule); list items leave it out.
    ...(schedule !== undefined ? { schedule } : {}),
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

export function presentReceptorPage(p: Page<ReceptorView['doc']>): z.input<typeof ReceptorList> {
  return { receptors: p.items.map((doc) => presentReceptor({ doc })), ...presentPage(p) };
}

/** A binding; its webhook secret only when just created or rotated (like an API key, shown once). */
export function presentBinding(
  b: ChannelBindingRow,
  extra: { webhookUrl: string; secret?: string },
): z.input<typeof ChannelBinding> {
  return {
    id: b._id,
    receptor_id: b.receptorId,
    channel: b.channel,
    external_id: b.externalId,
    trace_id: b.traceId,
    metadata: b.metadata,
    is_active: b.isActive,
    webhook_url: extra.webhookUrl,
    ...(extra.secret ? { webhook_secret: extra.secret } : {}),
    created_at: b.createdAt.toISOString(),
    updated_at: b.updatedAt.toISOString(),
  };
}
