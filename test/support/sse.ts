import { createParser, type EventSourceMessage } from 'eventsource-parser';

/**
 * Reads an SSE response with eventsource-parser until `until` says stop or the timeout
 * passes, then aborts the request. Comments (`: ping`) are collected separately.
 */
export async function readSse(
  url: string,
  opts: {
    headers?: Record<string, string>;
    until?: (events: EventSourceMessage[]) => boolean;
    timeoutMs?: number;
    onOpen?: () => Promise<void> | void;
  } = {},
) {
  const ac = new AbortController();
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs ?? 10_000);
  let status = 0;
  let contentType = '';
  let ended = false;
  try {
    const res = await fetch(url, { headers: opts.headers, signal: ac.signal });
    status = res.status;
    contentType = res.headers.get('content-type') ?? '';
    if (!res.ok || !res.body) return { status, contentType, events, comments, ended, body: await res.text() };
    const parser = createParser({ onEvent: (e) => events.push(e), onComment: (c) => comments.push(c.trim()) });
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    if (opts.onOpen) await opts.onOpen();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      parser.feed(decoder.decode(value, { stream: true }));
      if (opts.until?.(events)) break;
    }
    if (!ended) ac.abort();
  } catch (e) {
    if ((e as Error).name !== 'AbortError') throw e;
  } finally {
    clearTimeout(timer);
  }
  return { status, contentType, events, comments, ended, body: '' };
}

export const dataOf = (e: EventSourceMessage): Record<string, unknown> => JSON.parse(e.data) as Record<string, unknown>;

/**
 * What a client following the job stream rules (docs/streams.md) shows: per turn, the tokens of
 * the latest attempt (a `reset` drops the turn's earlier tokens), turns in order.
 */
export function shownReply(entries: Record<string, unknown>[]): string {
  const turns = new Map<number, string[]>();
  for (const e of entries) {
    const turn = Number(e.turn);
    if (e.type === 'reset') turns.set(turn, []);
    if (e.type === 'token') turns.set(turn, [...(turns.get(turn) ?? []), String(e.text)]);
  }
  return [...turns.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, parts]) => parts.join(''))
    .join('');
}
