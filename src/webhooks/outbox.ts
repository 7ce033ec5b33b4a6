import type { Logger } from '../kernel/logger.js';
import type { WebhookEventDoc, WebhookEventRecord } from './model.js';
import type { WebhookStore } from './store.js';
import { uuidFromName } from '../kernel/ids.js';

/**
 * A durable record of changes whose events are not announced yet, kept by the area that owns the
 * change (a job's terminal claim carries its mark in its own insert): the outbox of those events.
 * The follower holds an item, fans its events out, then settles it.
 */
export interface OutboxSource {
  name: string;
  /** Up to `limit` items whose events are not announced yet. */
  due(limit: number): Promise<OutboxItem[]>;
}
interface OutboxItem {
  events: WebhookEventRecord[];
  /** Holds the item for this follower until `until`; false when another follower moved it first. */
  hold(until: Date): Promise<boolean>;
  /** Its events are fanned out: it leaves the outbox. */
  settle(): Promise<void>;
}

export interface OutboxFollowerOptions {
  /** How often an idle follower looks for due rows (a change in this process wakes it at once). */
  pollMs: number;
  /** How long a follower holds the rows it took; a follower that died lets them fall due again after it. */
  holdMs: number;
  /** Rows taken per read. */
  batch: number;
}

/** The outbox row of an event: its id is name-based on the event's key, so recording it twice keeps one row. */
export const eventRow = (e: WebhookEventRecord, now = new Date()): WebhookEventDoc => ({
  _id: uuidFromName(`webhook-event:${e.key}`),
  workspaceId: e.workspaceId,
  event: e.event,
  key: e.key,
  at: e.at,
  data: JSON.stringify(e.data),
  dueAt: now,
});

/**
 * The webhook outbox's follower (docs/webhooks.md, "Delivery guarantees"). Every API and worker
 * process runs one. Each round it
 * 1. takes every source's due items (job ends), holds them for `holdMs` (other followers skip
 *    them), fans their events out and settles them;
 * 2. takes the outbox rows that are due (waits, interventions), holds them the same way, fans each
 *    out and removes it.
 * Fanning out (`fanOut`) records one delivery per endpoint subscribed at that moment (read from
 * the store) and starts its workflow.
 * A follower that dies mid-round leaves its rows due again once the hold passes; another follower
 * (or this one restarted) fans them out again, which is idempotent: delivery ids are name-based on
 * (endpoint, event key), recorded by unique insert, and each delivery's workflow id is its id.
 */
export function createOutboxFollower(d: {
  store: WebhookStore;
  sources: () => readonly OutboxSource[];
  fanOut: (row: WebhookEventDoc) => Promise<void>;
  options: OutboxFollowerOptions;
  log?: Logger;
}) {
  const { store, options: o, log } = d;
  let running: Promise<void> | null = null;
  let stopped = false;
  let wakeUp: (() => void) | null = null;
  let woken = false;

  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopped) {
        woken = false;
        return resolve();
      }
      const t = setTimeout(done, ms);
      t.unref();
      function done() {
        clearTimeout(t);
        wakeUp = null;
        woken = false;
        resolve();
      }
      wakeUp = done;
    });

  /** Fans out `work` a few at a time (each is a store read and a workflow start per endpoint); failures are left held. */
  async function lanes<T>(work: T[], run: (w: T) => Promise<void>, name: (w: T) => string): Promise<void> {
    const queue = [...work];
    await Promise.all(
      Array.from({ length: Math.min(8, queue.length) }, async () => {
        for (let w = queue.shift(); w !== undefined; w = queue.shift()) {
          try {
            await run(w);
          } catch (err) {
            // Left held: it falls due again after the hold (and is fanned out again, idempotently).
            log?.warn(
              { err: (err as Error).message, key: name(w) },
              'webhook outbox: fanning out an event failed; retried',
            );
          }
        }
      }),
    );
  }

  /** Fans out the events of every source's due items it holds, then settles them; returns how many items it read. */
  async function drainSources(): Promise<number> {
    let n = 0;
    for (const s of d.sources()) {
      const items = await s.due(o.batch);
      n += items.length;
      const until = new Date(Date.now() + o.holdMs);
      const held: OutboxItem[] = [];
      for (const item of items) if (await item.hold(until)) held.push(item);
      await lanes(
        held,
        async (item) => {
          for (const e of item.events) await d.fanOut(eventRow(e));
          await item.settle();
        },
        (item) => item.events.map((e) => e.key).join(',') || s.name,
      );
    }
    return n;
  }

  /** Takes the due rows, fans out those it holds; returns how many rows it read. */
  async function drainOutbox(): Promise<number> {
    const now = new Date();
    const rows = await store.dueEvents(now, o.batch);
    const until = new Date(now.getTime() + o.holdMs);
    const held: WebhookEventDoc[] = [];
    for (const r of rows) if (await store.holdEvent(r._id, r.dueAt, until)) held.push(r);
    await lanes(
      held,
      async (r) => {
        await d.fanOut(r);
        await store.eventDone(r._id);
      },
      (r) => r.key,
    );
    return rows.length;
  }

  /** One round: sources, then the outbox rows. Returns whether a full batch was found (go again at once). */
  async function round(): Promise<boolean> {
    const fromSources = await drainSources();
    const read = await drainOutbox();
    return fromSources >= o.batch || read >= o.batch;
  }

  async function loop(): Promise<void> {
    while (!stopped) {
      let again = false;
      try {
        again = await round();
      } catch (err) {
        if (stopped) break;
        log?.warn({ err: (err as Error).message }, 'webhook outbox: a round failed; retrying');
      }
      if (!again) await rest(o.pollMs);
    }
  }

  return {
    /** Starts following (idempotent). */
    start(): void {
      if (running || stopped) return;
      running = loop();
    },
    /** A change was recorded in this process: look now rather than at the next poll. */
    wake(): void {
      woken = true;
      wakeUp?.();
    },
    /** Stops after the current round. */
    async stop(): Promise<void> {
      stopped = true;
      wakeUp?.();
      await running;
    },
    /** One round now (tests, and an operator's drain). */
    round,
  };
}
