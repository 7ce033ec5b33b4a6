import { z } from 'zod';
import { IdParams, PageTotal, SuccessBody, pageFields } from '../../src/kernel/schemas.js';
import {
  BackfillBody,
  BindingCreateBody,
  BindingIdQuery,
  BindingListQuery,
  BindingPatchBody,
  BindingPatchByBody,
  ChannelBinding,
  ChatWebhookBody,
  ChatWebhookParams,
  FireAccepted,
  FireBody,
  PauseBody,
  Receptor,
  ReceptorGetQuery,
  ReceptorList,
  ReceptorListQuery,
  ReceptorPatchBody,
  ReceptorFireParams,
  ReceptorRefParams,
  SchedulePreview,
  SchedulePreviewBody,
  StimuliCatalog,
  StimuliCatalogQuery,
  StimulusEventBody,
  SubscribeBody,
  TriggerBody,
  STIMULI,
  internalSecret,
  toTiming,
  verifySignature,
} from '../../src/receptors/index.js';
import { presentBinding, presentReceptor, presentReceptorPage } from '../presenters/receptors.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({
  channelBindings: s.channelBindings,
  config: s.config,
  receptorFires: s.receptorFires,
  receptors: s.receptors,
  schedules: s.schedules,
}));

const tags = ['receptors'];
const rawBodyOf = (ctx: { request: unknown }) => (ctx.request as { rawBody?: string }).rawBody ?? '';
const Backfilled = z.object({
  receptor: Receptor,
  backfill: z.object({ start_at: z.string(), end_at: z.string(), runs: z.number() }),
});
const Triggered = z.object({ receptor: Receptor, triggered: z.literal(true) });
const Published = z.object({
  key: z.string(),
  event_id: z.string(),
  fired: z.array(z.object({ receptor_id: z.string(), job_id: z.string(), duplicate: z.boolean() })),
  skipped: z.array(z.object({ receptor_id: z.string(), reason: z.string() })),
});
const BindingList = z.object({
  bindings: z.array(ChannelBinding),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});
const WebhookAccepted = z.object({
  job_id: z.string(),
  status: z.string(),
  duplicate: z.boolean(),
  trace_id: z.string().nullable(),
  receptor_id: z.string(),
});

/**
 * Receptors (docs/receptors.md): reads and changes, fire, template
 * subscriptions, schedule controls, the stimuli catalog and the signed internal stimulus route,
 * channel bindings (session auth) and the signed chat webhook ingress.
 */
export default [
  route({
    method: 'get',
    path: '/v1/receptors',
    summary: 'List receptors',
    brain: 'required',
    query: ReceptorListQuery,
    response: ReceptorList,
    tags,
    handler: async ({ query, scope, services }) => presentReceptorPage(await services.receptors.list(scope, query)),
  }),
  route({
    method: 'post',
    path: '/v1/receptors/subscribe',
    summary: 'Create a schedule or stimulus receptor',
    status: 201,
    brain: 'optional',
    body: SubscribeBody,
    response: Receptor,
    tags,
    description:
      'Creates a receptor from a template: schedule (cron or interval in a time zone) or stimulus (platform events)',
    handler: async ({ body, scope, services }) => presentReceptor(await services.receptors.subscribe(scope, body)),
  }),
  route({
    method: 'post',
    path: '/v1/receptors/:id/fire',
    summary: 'Fire a receptor',
    status: 202,
    params: ReceptorFireParams,
    body: FireBody,
    response: FireAccepted,
    tags,
    description: "Fires the receptor: a receptorFire workflow runs its target; job_id is the target run's job",
    handler: async ({ params, body, scope, services }) => {
      const { job, traceId, receptorId } = await services.receptorFires.fire(scope, params.id, body);
      return { job_id: job._id, status: 'pending' as const, trace_id: traceId, receptor_id: receptorId };
    },
  }),
  route({
    method: 'get',
    path: '/v1/receptors/:workspace_slug/:slug_or_id',
    summary: 'Read a receptor',
    params: ReceptorRefParams,
    query: ReceptorGetQuery,
    response: Receptor,
    tags,
    description: 'By slug or UUID; a scheduled receptor shows its schedule (state, next fire times, recent fires)',
    handler: async ({ params, query, scope, services }) =>
      presentReceptor(await services.receptors.get(scope, params.workspace_slug, params.slug_or_id, query.preview)),
  }),
  route({
    method: 'patch',
    // The PATCH takes a slug or an id like its GET and DELETE: one path template with one
    // parameter name (OpenAPI counts /{slug} and /{slug_or_id} as the same path).
    path: '/v1/receptors/:workspace_slug/:slug_or_id',
    summary: 'Change a receptor',
    params: ReceptorRefParams,
    body: ReceptorPatchBody,
    response: Receptor,
    tags,
    handler: async ({ params, body, scope, services }) =>
      presentReceptor(await services.receptors.patch(scope, params.workspace_slug, params.slug_or_id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/receptors/:workspace_slug/:slug_or_id',
    summary: 'Delete a subscription receptor',
    params: ReceptorRefParams,
    response: SuccessBody,
    tags,
    description:
      "Removes a subscription receptor and its schedule; a neuron's or pathway's own receptor goes with its target",
    handler: async ({ params, scope, services }) => {
      await services.receptors.remove(scope, params.workspace_slug, params.slug_or_id);
      return { success: true as const };
    },
  }),
  route({
    method: 'post',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/schedule/pause',
    summary: "Pause a receptor's schedule",
    params: ReceptorRefParams,
    body: PauseBody,
    response: Receptor,
    tags,
    handler: async ({ params, body, scope, services }) =>
      presentReceptor(
        await services.receptors.setPaused(scope, params.workspace_slug, params.slug_or_id, true, body.note),
      ),
  }),
  route({
    method: 'post',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/schedule/unpause',
    summary: "Unpause a receptor's schedule",
    params: ReceptorRefParams,
    body: PauseBody,
    response: Receptor,
    tags,
    handler: async ({ params, body, scope, services }) =>
      presentReceptor(
        await services.receptors.setPaused(scope, params.workspace_slug, params.slug_or_id, false, body.note),
      ),
  }),
  route({
    method: 'post',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/schedule/trigger',
    summary: "Fire a receptor's schedule now",
    params: ReceptorRefParams,
    body: TriggerBody,
    response: Triggered,
    tags,
    description: 'Fires the schedule now (its overlap policy applies unless another is given)',
    handler: async ({ params, body, scope, services }) => {
      const r = await services.receptors.scheduled(scope, params.workspace_slug, params.slug_or_id);
      await services.schedules.trigger(r, body.overlap);
      return { receptor: presentReceptor(await services.receptors.view(r, 5)), triggered: true as const };
    },
  }),
  route({
    method: 'post',
    path: '/v1/schedules/preview',
    summary: 'Preview the next fire times of a schedule',
    body: SchedulePreviewBody,
    response: SchedulePreview,
    tags,
    description:
      "The next fire times (UTC) of a schedule receptor's timing before it is saved, computed by Temporal as the saved schedule would fire; nothing is stored",
    examples: {
      request: { timing: { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' }, count: 3 },
      response: {
        timezone: 'Europe/Berlin',
        next_fire_times: ['2026-12-01T08:00:00.000Z', '2026-12-02T08:00:00.000Z', '2026-12-03T08:00:00.000Z'],
      },
    },
    handler: async ({ body, scope, services }) => ({
      timezone: body.timing.timezone,
      next_fire_times: (await services.schedules.preview(scope.workspaceId, toTiming(body.timing), body.count)).map(
        (d) => d.toISOString(),
      ),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/schedule/backfill',
    summary: "Backfill a receptor's schedule",
    params: ReceptorRefParams,
    body: BackfillBody,
    response: Backfilled,
    tags,
    description: 'Starts the fires a past range would have had (at most 500)',
    handler: async ({ params, body, scope, services }) => {
      const r = await services.receptors.scheduled(scope, params.workspace_slug, params.slug_or_id);
      const runs = await services.schedules.backfill(r, new Date(body.start_at), new Date(body.end_at), body.overlap);
      return {
        receptor: presentReceptor(await services.receptors.view(r, 5)),
        backfill: { start_at: body.start_at, end_at: body.end_at, runs },
      };
    },
  }),
  route({
    method: 'get',
    path: '/v1/resources/receptors/:id',
    summary: 'Read a receptor from the catalog',
    params: IdParams,
    response: z.object({ receptor: Receptor }),
    tags: ['receptors', 'resources'],
    handler: async ({ params, scope, services }) => ({
      receptor: presentReceptor(await services.receptors.catalogGet(scope, params.id)),
    }),
  }),

  route({
    method: 'get',
    path: '/v1/stimuli/catalog',
    summary: 'List the stimuli receptors can subscribe to',
    query: StimuliCatalogQuery,
    response: StimuliCatalog,
    tags,
    description:
      'Hooks a stimulus receptor can subscribe to (vault., plasticity., maintenance.); schedulable=true for schedule-eligible keys',
    handler: async ({ query }) => ({
      stimuli: STIMULI.filter((s) => query.schedulable === undefined || s.schedulable === query.schedulable),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/internal/stimuli',
    summary: 'Publish a signed platform event',
    operationId: 'internal.stimuli.publish',

    auth: 'none',
    body: StimulusEventBody,
    response: Published,
    tags,
    description:
      'Server to server only: a signed platform event (X-Cortex-Signature) fires every subscribed receptor once per event_id',
    handler: async ({ body, ctx, services }) => {
      verifySignature(internalSecret(services.config), ctx.get('x-cortex-signature') || undefined, rawBodyOf(ctx));
      return services.receptorFires.publish(body.workspace_id, {
        key: body.key,
        eventId: body.event_id,
        payload: body.payload,
      });
    },
  }),

  route({
    method: 'get',
    path: '/v1/receptor-channel-bindings',
    summary: 'List channel bindings',
    auth: 'jwt',
    query: BindingListQuery,
    response: BindingList,
    tags,
    handler: async ({ query, scope, services }) => {
      const page = await services.channelBindings.list(scope, query);
      return {
        bindings: page.items.map((b) => presentBinding(b, { webhookUrl: services.channelBindings.webhookUrl(b) })),
        ...presentPage(page),
      };
    },
  }),
  route({
    method: 'post',
    path: '/v1/receptor-channel-bindings',
    summary: 'Bind a chat or email channel to a receptor',
    status: 201,
    auth: 'jwt',
    body: BindingCreateBody,
    response: ChannelBinding,
    tags,
    description: 'Binds an external conversation to a receptor; the response shows the webhook secret once',
    handler: async ({ body, scope, services }) => {
      const b = await services.channelBindings.create(scope, body);
      return presentBinding(b, {
        webhookUrl: services.channelBindings.webhookUrl(b),
        secret: services.channelBindings.secretOf(b),
      });
    },
  }),
  route({
    method: 'get',
    path: '/v1/receptor-channel-bindings/:id',
    summary: 'Read a channel binding',
    auth: 'jwt',
    params: IdParams,
    response: ChannelBinding,
    tags,
    handler: async ({ params, scope, services }) => {
      const b = await services.channelBindings.get(scope, params.id);
      return presentBinding(b, { webhookUrl: services.channelBindings.webhookUrl(b) });
    },
  }),
  route({
    method: 'patch',
    path: '/v1/receptor-channel-bindings/:id',
    summary: 'Change a channel binding',
    auth: 'jwt',
    params: IdParams,
    body: BindingPatchBody,
    response: ChannelBinding,
    tags,
    handler: async ({ params, body, scope, services }) => {
      const { doc, rotated } = await services.channelBindings.patch(scope, params.id, body);
      return presentBinding(doc, {
        webhookUrl: services.channelBindings.webhookUrl(doc),
        ...(rotated ? { secret: services.channelBindings.secretOf(doc) } : {}),
      });
    },
  }),
  route({
    method: 'patch',
    path: '/v1/receptor-channel-bindings',
    summary: 'Change a channel binding (id in the body)',
    operationId: 'receptorChannelBindings.updateByBody',
    auth: 'jwt',
    body: BindingPatchByBody,
    response: ChannelBinding,
    tags,
    description: 'The same change with the binding id in the body',
    handler: async ({ body, scope, services }) => {
      const { id, ...rest } = body;
      const { doc, rotated } = await services.channelBindings.patch(scope, id, rest);
      return presentBinding(doc, {
        webhookUrl: services.channelBindings.webhookUrl(doc),
        ...(rotated ? { secret: services.channelBindings.secretOf(doc) } : {}),
      });
    },
  }),
  route({
    method: 'delete',
    path: '/v1/receptor-channel-bindings/:id',
    summary: 'Remove a channel binding',
    auth: 'jwt',
    params: IdParams,
    response: SuccessBody,
    tags,
    handler: async ({ params, scope, services }) => {
      await services.channelBindings.remove(scope, params.id);
      return { success: true as const };
    },
  }),
  route({
    method: 'delete',
    path: '/v1/receptor-channel-bindings',
    summary: 'Remove a channel binding (id in the query)',
    operationId: 'receptorChannelBindings.deleteByQuery',
    auth: 'jwt',
    query: BindingIdQuery,
    response: SuccessBody,
    tags,
    description: 'The same removal with ?id=',
    handler: async ({ query, scope, services }) => {
      await services.channelBindings.remove(scope, query.id);
      return { success: true as const };
    },
  }),
  route({
    method: 'post',
    path: '/v1/chat-webhooks/:provider',
    summary: 'Receive a signed chat or email message',
    status: 202,
    auth: 'none',
    params: ChatWebhookParams,
    body: ChatWebhookBody,
    response: WebhookAccepted,
    tags,
    description:
      "Generic signed ingress for chat and email channels (X-Cortex-Signature with the binding's webhook secret); fires once per event_id",
    handler: async ({ params, body, ctx, services }) =>
      services.channelBindings.ingest(
        params.provider,
        ctx.get('x-cortex-signature') || undefined,
        rawBodyOf(ctx),
        body,
      ),
  }),
];
