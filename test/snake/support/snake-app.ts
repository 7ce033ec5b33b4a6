import type { AddressInfo } from 'node:net';
import { createSnakeApp, createSnakeLogger } from '../../../snake/app.js';
import { loadSnakeConfig } from '../../../snake/config.js';

/** One HTTP exchange, with the raw text kept for leak checks. */
export interface Exchange {
  status: number;
  body: unknown;
  text: string;
  headers: Headers;
}

/**
 * Runs the real snake app on 127.0.0.1 port 0, configured through the same env parser as server.ts, and
 * captures its log lines. Returns small request helpers; every exchange is also kept in `exchanges`.
 */
export async function startSnake(env: Record<string, string | undefined>) {
  const config = loadSnakeConfig({ LOG_LEVEL: 'debug', ...env });
  const logs: string[] = [];
  const logger = createSnakeLogger('debug', { write: (line: string) => void logs.push(line) });
  const server = createSnakeApp({ config, logger }).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const exchanges: Exchange[] = [];

  async function request(
    method: string,
    path: string,
    body?: unknown,
    raw?: { type: string; text: string },
  ): Promise<Exchange> {
    const init: RequestInit = { method };
    if (raw) init.headers = { 'content-type': raw.type };
    if (raw) init.body = raw.text;
    else if (body !== undefined) {
      init.headers = { 'content-type': 'application/json' };
      init.body = JSON.stringify(body);
    }
    const res = await fetch(`${url}${path}`, init);
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      // a page or script
    }
    const ex = { status: res.status, body: parsed, text, headers: res.headers };
    exchanges.push(ex);
    return ex;
  }

  return {
    url,
    logs,
    exchanges,
    get: (path: string) => request('GET', path),
    post: (path: string, body?: unknown) => request('POST', path, body),
    postRaw: (path: string, type: string, text: string) => request('POST', path, undefined, { type, text }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
export type SnakeTestApp = Awaited<ReturnType<typeof startSnake>>;

/**
 * The snake env for a platform: key, brain, neuron, a 3 s decision deadline (each decision is
 * a durable workflow run) and fast polling.
 */
export function snakeEnv(
  p: { apiUrl: string; apiKey: string; brainId: string; neuron: string },
  over: Record<string, string | undefined> = {},
) {
  return {
    CORTEX_API_URL: p.apiUrl,
    CORTEX_API_KEY: p.apiKey,
    CORTEX_BRAIN_ID: p.brainId,
    SNAKE_NEURON: p.neuron,
    SNAKE_AGENT_TIMEOUT_MS: '3000',
    SNAKE_POLL_MS: '20',
    ...over,
  };
}
