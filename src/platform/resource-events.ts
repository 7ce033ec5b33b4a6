import type { Logger } from '../kernel/logger.js';
import type { Streams } from '../kernel/streams.js';
import type { Bus } from '../kernel/events.js';

export type ResourceAction = 'created' | 'updated' | 'deleted' | 'moved';
/** The resource an event is about: enough for a follower (search index, stimuli, a UI) to re-read it. */
export interface ResourceRef {
  kind:
    | 'neuron'
    | 'pathway'
    | 'receptor'
    | 'reflex'
    | 'skill'
    | 'asset'
    | 'artifact'
    | 'memory'
    | 'recollection'
    | 'meeting'
    | 'stakeholder_map'
    | 'action_plan';
  id: string;
  brain_id?: string | null;
  name?: string | null;
  version?: number | null;
  /** Soft delete (catalog): the resource can still be read and restored. */
  soft?: boolean;
  /** What changed, when not the resource itself (`chunks`: its text was indexed again). */
  change?: string;
  /** Moves: the folder path before and after. */
  from_path?: string;
  to_path?: string;
  /** Meetings: the body fields an update changed, and the transcription state after it (docs/meetings.md). */
  fields?: string[];
  transcription?: {
    status: string;
    finalized_at?: string | null;
    session_id?: string;
    job_id?: string;
    artifact_id?: string;
    segment_count?: number;
  };
}

/**
 * The workspace's resource event stream (docs/knowledge.md, "Events and stimuli"): every create,
 * update, delete and move appends `{ action, resource, at }` in the code path that made the change
 * (the same fenced writer as every stream, src/kernel/streams.ts). GET /v1/resource-events/stream serves
 * it with `after=` resume; search indexes and stimuli follow it.
 */
export function createResourceEvents({ streams, log, bus }: { streams: Streams; log?: Logger; bus: Bus }) {
  return {
    streamKey: (workspaceId: string) => streams.keys.workspace(workspaceId),
    async emit(workspaceId: string, action: ResourceAction, resource: ResourceRef): Promise<void> {
      const at = new Date().toISOString();
      const id = await streams.append(streams.keys.workspace(workspaceId), { action, resource, at }, { kind: 'plain' });
      // The platform-wide feed the search index follows (every workspace's events, in order, on the
      // workspace's partition), with the workspace's mark that its searches wait for (docs/search.md).
      await streams.feed.append(workspaceId, { workspace_id: workspaceId, action, resource, at });
      // The knowledge lanes' changes are also stimuli (`vault.<kind>.<created|updated|deleted>`), once per
      // event (the stream entry id is the event id); a re-index of the same text is not a change.
      // The receptor fire service subscribes to `stimulus`; a failed fire never fails the change.
      if (!id || !VAULT_KINDS.has(resource.kind) || resource.change) return;
      const key = `vault.${resource.kind}.${action === 'moved' ? 'updated' : action}`;
      await bus.emit(
        'stimulus',
        {
          workspaceId,
          key,
          eventId: `${workspaceId}:${id}`,
          payload: {
            resource_type: resource.kind,
            resource_id: resource.id,
            brain_id: resource.brain_id ?? null,
            name: resource.name ?? null,
          },
        },
        { onError: (e: unknown) => log?.warn({ err: e, key }, 'publishing a vault stimulus failed') },
      );
    },
  };
}

const VAULT_KINDS = new Set<ResourceRef['kind']>(['asset', 'artifact', 'memory']);
export type ResourceEvents = ReturnType<typeof createResourceEvents>;
