import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  webhookId: string;
  body: string;
  /** The parsed body's `type` and `data.job_id` (when it has one). */
  type: string;
  jobId: string | null;
  /** What the receiver answered. */
  status: number;
}

/**
 * A webhook receiver on 127.0.0.1: keeps every request and answers 200 (or `answer(path)`), so a
 * test can count deliveries per path (one path per endpoint) and per `webhook-id`.
 */
export async function startWebhookReceiver(answer: (path: string) => number = () => 200) {
  const received: ReceivedWebhook[] = [];
  // While held, requests wait unanswered (a fault test holds them around a kill: what the receiver
  // never answered may be sent again; what it answered 2xx must not).
  let held: (() => void)[] | null = null;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    // The sender went away before the answer (its process was killed): the connection closed, or
    // it half-closed (a dead process's socket ends), which a waiting HTTP client never does.
    let gone = false;
    res.once('close', () => {
      if (!res.writableFinished) gone = true;
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => (held ? held.push(reply) : reply()));
    function reply() {
      const path = req.url ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      let type = '';
      let jobId: string | null = null;
      try {
        const parsed = JSON.parse(body) as { type?: string; data?: { job_id?: string } };
        type = String(parsed.type ?? '');
        jobId = parsed.data?.job_id ?? null;
      } catch {
        /* not JSON: kept as it came */
      }
      // A request whose sender went away while it was held was never answered (status 0).
      const status = gone || !res.socket || res.socket.destroyed || res.socket.readableEnded ? 0 : answer(path);
      received.push({
        path,
        headers: req.headers,
        webhookId: String(req.headers['webhook-id']),
        body,
        type,
        jobId,
        status,
      });
      if (status) res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    received,
    /** From now on, requests wait unanswered until `release`. */
    hold(): void {
      held ??= [];
    },
    /** Answers the held requests (those whose sender is gone are recorded unanswered) and stops holding. */
    release(): void {
      const waiting = held ?? [];
      held = null;
      for (const r of waiting) r();
    },
    /** What one path (endpoint) got. */
    at: (path: string) => received.filter((r) => r.path === path),
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

/** Polls `read` until `done` holds; throws naming `what` (and the last value) after `ms`. */
export async function until<T>(what: string, read: () => T | Promise<T>, done: (v: T) => boolean, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
