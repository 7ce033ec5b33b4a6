import type { Logger } from '../logger.js';
import type { WebhookEventDoc, WebhookEventRecord } from './model.js';
import type { WebhookStore } from './store.js';
import { uuidFromName } from '../ids.js';

/**
 * A durable record of changes whose events are not in the outbox yet, kept by the area that owns
 * the change (a job's terminal claim carries its mark in its own insert). The follower records
 * each item's events in the outbox, then settles the item.
 */
export interface OutboxSource {
  name: string;
  /** Up to `limit` items whose events are not recorded yet. */
  due(limit: number): Promise<{ events: WebhookEventRecord[]; settle(): Promise<void> }[]>;
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
 * 1. records in the outbox the events of every source's due items, then settles them;
 * 2. takes the outbox rows that are due, holds them for `holdMs` (pushing `dueAt` forward, so
 *    other followers skip them), fans each out (`fanOut`: one delivery per endpoint subscribed
 *    now, read from the store), and removes the row.
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

  /** Records the events of every source's due items; returns how many items it settled. */
  async function drainSources(): Promise<number> {
    let n = 0;
    for (const s of d.sources()) {
      const items = await s.due(o.batch);
      for (const item of items) {
        for (const e of item.events) await store.recordEvent(eventRow(e));
        await item.settle();
        n++;
      }
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
    // A few rows at a time: each fan-out is a store read and a workflow start per endpoint.
    const queue = [...held];
    const lanes = Array.from({ length: Math.min(8, queue.length) }, async () => {
      for (let r = queue.shift(); r; r = queue.shift()) {
        try {
          await d.fanOut(r);
          await store.eventDone(r._id);
        } catch (err) {
          // Left held: it falls due again after the hold (and is fanned out again, idempotently).
          log?.warn(
            { err: (err as Error).message, key: r.key },
            'webhook outbox: fanning out an event failed; retried',
          );
        }
      }
    });
    await Promise.all(lanes);
    return rows.length;
  }

  /** One round: sources, then the outbox. Returns whether a full batch was found (go again at once). */
  async function round(): Promise<boolean> {
    const settled = await drainSources();
    const read = await drainOutbox();
    return settled >= o.batch || read >= o.batch;
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
export type OutboxFollower = ReturnType<typeof createOutboxFollower>;
