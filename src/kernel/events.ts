import type { Scope } from './scope.js';

/**
 * The platform's events (docs/architecture.md, "Layers"): the area that makes a change publishes
 * it, the areas that react to it subscribe, and both know only this map. One bus is made per set
 * of services (src/compose/services.ts) and handed to the areas that publish or subscribe.
 *
 * The kernel knows no area: an event that carries an area's entity is added to this map by that
 * area, next to the entity's type (`declare module '../kernel/events.js'`: `job.status` and
 * `job.restart` in src/jobs/model.ts, `neuron.*` in src/neurons/store.mongo.ts,
 * `intervention.changed` in src/interventions/model.ts).
 * @public (exported for the areas' augmentations)
 */
export interface Events {
  /** A platform event receptors may subscribe to: vault changes, pathway-run events (receptor fires subscribe). */
  stimulus: Stimulus;
  /** A meeting's transcript is final (meetings publish; stakeholder extraction subscribes). */
  'transcript.finalized': FinalizedTranscript;
  /** A pathway was created (it gets its receptor as a neuron does). */
  'pathway.created': { scope: Scope; pathway: { _id: string; brainId: string; name: string; isActive: boolean } };
  /** A pathway was turned on or off. */
  'pathway.activity': { scope: Scope; pathwayId: string; isActive: boolean };
  /** A pathway was removed. */
  'pathway.removed': { scope: Scope; pathwayId: string };
}

/** A stimulus: `key` names it (`vault.asset.created`, `pathway.completed`…), `eventId` makes its fires idempotent. */
interface Stimulus {
  workspaceId: string;
  key: string;
  eventId: string;
  payload: Record<string, unknown>;
}

/** A finalized meeting transcript as `Speaker: text` lines. */
interface FinalizedTranscript {
  workspaceId: string;
  meeting: { id: string; brainId: string; text: string; finalizedAt: Date };
}

/** Questions one area answers for another: one handler each (areas add theirs, as with Events). @public */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by the areas' augmentations
export interface Requests {}

type EventHandler<K extends keyof Events> = (payload: Events[K]) => Promise<unknown> | unknown;
type RequestHandler<K extends keyof Requests> = (input: Requests[K]['input']) => Promise<Requests[K]['output']>;

interface EmitOptions {
  /**
   * Told of each failing handler; the next handlers still run and the emit resolves. Without it the
   * first failure rejects the emit and the handlers after it do not run.
   */
  onError?: (err: unknown) => void;
}

/**
 * Dispatch is asynchronous and in order: `emit` calls the handlers one after another in the order
 * they subscribed, awaiting each, and resolves once all have (a publisher that awaits the emit
 * awaits its subscribers, as it awaited its callbacks before the bus). An event without subscribers
 * resolves at once. `request` asks the one handler of a question; undefined when none is registered.
 */
export interface Bus {
  on<K extends keyof Events>(type: K, handler: EventHandler<K>): void;
  emit<K extends keyof Events>(type: K, payload: Events[K], options?: EmitOptions): Promise<void>;
  handle<K extends keyof Requests>(type: K, handler: RequestHandler<K>): void;
  request<K extends keyof Requests>(type: K, input: Requests[K]['input']): Promise<Requests[K]['output'] | undefined>;
}

export function createBus(): Bus {
  const handlers = new Map<keyof Events, ((payload: never) => unknown)[]>();
  const answers = new Map<keyof Requests, (input: never) => Promise<unknown>>();
  return {
    on(type, handler) {
      const list = handlers.get(type) ?? [];
      list.push(handler);
      handlers.set(type, list);
    },
    async emit(type, payload, options) {
      const list = handlers.get(type) as EventHandler<typeof type>[] | undefined;
      if (!list) return;
      for (const handler of [...list]) {
        if (!options?.onError) {
          await handler(payload);
          continue;
        }
        try {
          await handler(payload);
        } catch (e) {
          options.onError(e);
        }
      }
    },
    handle(type, handler) {
      if (answers.has(type)) throw new Error(`the request ${type} already has a handler`);
      answers.set(type, handler);
    },
    async request(type, input) {
      const handler = answers.get(type) as RequestHandler<typeof type> | undefined;
      return handler ? handler(input) : undefined;
    },
  };
}
