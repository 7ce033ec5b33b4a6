/*
 * Creates the snake's decision neuron on the platform, idempotently; `npm run up` calls it for the user.
 * It only creates: an existing neuron (a user may have tuned its prompt) is left as it is.
 */

/** The neuron's name, which is also what the service invokes by default (SNAKE_NEURON). */
export const DECISION_NEURON_NAME = 'snake-decider';

/** The decision neuron's instructions: one word, one of four. The service parses and checks the reply. */
export const DECISION_SYSTEM_PROMPT = [
  'You steer the snake in a grid game. Each message describes the board; data holds the full state as JSON:',
  'width, height, snake (cells head first; x grows right, y grows down, (0, 0) is the top-left cell), heading, fruit.',
  'Choose the next move: head for the fruit if there is one, never leave the board, never run into the snake body,',
  "and never reverse into the snake's neck. Prefer the moves the message lists as safe.",
  'Reply with exactly one word: up, down, left or right. No other text, no punctuation, no explanation.',
].join('\n');

/** Where and as whom to provision; `fetch` is injectable for tests. */
export interface EnsureDecisionNeuronOptions {
  apiUrl: string;
  apiKey: string;
  brainId: string;
  model: string;
  name?: string;
  fetch?: typeof fetch;
}

/** The outcome, so `npm run up` can say whether it created the neuron. */
export interface EnsureDecisionNeuronResult {
  name: string;
  id?: string;
  created: boolean;
}

/**
 * GET /v1/neurons/{name}: 200 means it exists; 404 means create it with POST /v1/neurons. A 409 on create
 * (another `up` won the race) counts as existing. Any other status throws; messages never include the key.
 */
export async function ensureDecisionNeuron(opts: EnsureDecisionNeuronOptions): Promise<EnsureDecisionNeuronResult> {
  const { apiKey, brainId, model, name = DECISION_NEURON_NAME, fetch: doFetch = globalThis.fetch } = opts;
  const api = opts.apiUrl.replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${apiKey}`, 'x-brain-id': brainId, 'content-type': 'application/json' };
  const fail = async (what: string, res: Response) => {
    const text = (await res.text().catch(() => '')).split(apiKey).join('[redacted]').slice(0, 300);
    return new Error(`ensureDecisionNeuron: ${what} answered ${res.status}${text ? `: ${text}` : ''}`);
  };
  const idOf = async (res: Response) => {
    const body = (await res.json().catch(() => null)) as { id?: unknown } | null;
    return typeof body?.id === 'string' ? body.id : undefined;
  };

  const found = await doFetch(`${api}/v1/neurons/${encodeURIComponent(name)}`, { headers });
  if (found.ok) return { name, id: await idOf(found), created: false };
  if (found.status !== 404) throw await fail(`GET /v1/neurons/${name}`, found);

  const res = await doFetch(`${api}/v1/neurons`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      name,
      brain_id: brainId,
      description: 'Decides the next heading (up, down, left or right) for the snake demo service.',
      neuron_config: { system_prompt: DECISION_SYSTEM_PROMPT, model },
    }),
  });
  if (res.status === 409) return { name, created: false };
  if (!res.ok) throw await fail('POST /v1/neurons', res);
  return { name, id: await idOf(res), created: true };
}
