import { createHmac, randomUUID } from 'node:crypto';
import type { Config } from '../kernel/config.js';
import type { BindingChange, ChannelBinding } from './model.js';
import type { ReceptorStore } from './store.js';
import { conflict, notFound, validationError } from '../kernel/errors.js';
import type { BindingCreateBody, BindingPatchBody, ChatWebhookBody } from './schemas.js';
import { systemScope, type Scope } from '../kernel/scope.js';
import type { ReceptorFireService } from './fires.js';
import type { ReceptorService } from './service.js';
import { uuidFromName } from '../kernel/ids.js';
import { verifySignature } from './stimuli.js';

/**
 * Receptor channel bindings (docs/receptors.md, "Channel bindings and the webhook ingress"): an external chat or email conversation (channel +
 * external id, unique on the platform) mapped to a receptor, and the generic signed webhook
 * ingress that turns a provider's message into a fire of that receptor (docs/receptors.md).
 * Each binding has its own webhook secret, derived from the binding id and a version number
 * (never stored; a rotation bumps the version).
 */
export function createChannelBindingService({
  repo,
  receptors,
  fires,
  config,
}: {
  repo: ReceptorStore;
  receptors: ReceptorService;
  fires: ReceptorFireService;
  config: Config;
}) {
  const secretOf = (b: Pick<ChannelBinding, '_id' | 'secretVersion'>) =>
    createHmac('sha256', config.INTERNAL_SIGNING_SECRET ?? config.JWT_SECRET)
      .update(`cortex:channel-binding:${b._id}:${b.secretVersion}`)
      .digest('base64url');
  const webhookUrl = (b: ChannelBinding) =>
    `${config.CHAT_WEBHOOK_BASE_URL ?? `http://${config.HOST}:${config.PORT}`}/v1/chat-webhooks/${b.channel}`;

  async function get(scope: Scope, id: string): Promise<ChannelBinding> {
    const b = await repo.findBinding(scope.workspaceId, id);
    if (!b) throw notFound('Channel binding');
    return b;
  }

  /** The receptor must be the caller's and listen on the channel (400 otherwise). */
  async function checkReceptor(scope: Scope, receptorId: string, channel: string) {
    const r = await receptors.lookup(scope, receptorId);
    if (!r.activeChannels.includes(channel))
      throw validationError(
        `channel ${channel} is not in the receptor's active_channels (${r.activeChannels.join(', ') || 'none'}): add it with PATCH /v1/receptors/:workspace_slug/:slug first`,
      );
    return r;
  }

  return {
    secretOf,
    webhookUrl,
    get,

    async list(
      scope: Scope,
      q: { receptor_id?: string; channel?: string; id?: string; limit: number; offset: number; cursor?: string },
    ) {
      return repo.pageBindings(scope.workspaceId, { receptorId: q.receptor_id, channel: q.channel, id: q.id }, q);
    },

    /** 409 when the external id of that channel is bound already (on any workspace: a conversation reaches one receptor). */
    async create(scope: Scope, body: BindingCreateBody): Promise<ChannelBinding> {
      await checkReceptor(scope, body.receptor_id, body.channel);
      const now = new Date();
      const doc: ChannelBinding = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        receptorId: body.receptor_id,
        channel: body.channel,
        externalId: body.external_id,
        traceId: randomUUID(),
        metadata: body.metadata ?? {},
        isActive: body.is_active,
        secretVersion: 1,
        createdBy: scope.userId,
        createdAt: now,
        updatedAt: now,
      };
      if (!(await repo.createBinding(doc)))
        throw conflict(`${body.channel} conversation ${body.external_id} is already bound to a receptor`);
      return doc;
    },

    async patch(scope: Scope, id: string, body: BindingPatchBody): Promise<{ doc: ChannelBinding; rotated: boolean }> {
      const b = await get(scope, id);
      const set: BindingChange = { updatedAt: new Date() };
      if (body.receptor_id) {
        await checkReceptor(scope, body.receptor_id, b.channel);
        set.receptorId = body.receptor_id;
      }
      if (body.external_id) set.externalId = body.external_id;
      if (body.metadata) set.metadata = body.metadata;
      if (body.is_active !== undefined) set.isActive = body.is_active;
      if (body.rotate_secret) set.secretVersion = b.secretVersion + 1;
      if (!(await repo.updateBinding(scope.workspaceId, id, set)))
        throw conflict(`${b.channel} conversation ${body.external_id ?? ''} is already bound to a receptor`);
      return { doc: { ...b, ...set }, rotated: Boolean(body.rotate_secret) };
    },

    async remove(scope: Scope, id: string): Promise<void> {
      await get(scope, id);
      await repo.removeBinding(scope.workspaceId, id);
    },

    /**
     * POST /v1/chat-webhooks/:provider: a signed message from a chat or email provider. The
     * binding of (provider, external_id) names the receptor; the signature is checked with that
     * binding's secret; the receptor fires once per event_id, continuing the binding's thread.
     */
    async ingest(provider: string, signature: string | undefined, rawBody: string, body: ChatWebhookBody) {
      const b = await repo.bindingFor(provider, body.external_id);
      // No binding and a wrong signature look the same: nothing tells a prober which conversations exist.
      verifySignature(b ? secretOf(b) : randomUUID(), signature, rawBody);
      if (!b) throw notFound('Channel binding');
      if (!b.isActive) throw validationError('This channel binding is inactive');
      const scope = systemScope(b.workspaceId);
      const r = await receptors.lookup(scope, b.receptorId);
      if (!r.activeChannels.includes(provider))
        throw validationError(`channel ${provider} is no longer in the receptor's active_channels`);
      const why = await fires.notFireable(r);
      if (why) throw validationError(`Receptor cannot fire: ${why}`);
      const meta = b.metadata;
      const { job, created, traceId } = await fires.launch(r, {
        source: 'channel',
        scope: { ...systemScope(b.workspaceId, r.brainId), receptorId: r._id },
        trigger: {
          payload: {
            message: body.message,
            channel: provider,
            external_id: body.external_id,
            ...(body.sender ? { sender: body.sender } : {}),
            ...(Object.keys(meta).length ? { binding: meta } : {}),
          },
          data: body.data,
          traceId: r.executableTarget.kind === 'neuron' ? b.traceId : undefined,
        },
        jobId: uuidFromName(`channel:${b._id}:${body.event_id}`),
        eventId: body.event_id,
      });
      return { job_id: job._id, status: job.status, duplicate: !created, trace_id: traceId, receptor_id: r._id };
    },
  };
}
