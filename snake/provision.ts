import { createCortexClient } from '../clients/typescript/src/index.js';
import type { components } from '../clients/typescript/src/schema.js';

/** A pathway graph in the documented format (one schema per node type). */
type PathwayGraph = components['schemas']['PathwayGraph'];
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

/** The decision pathway's name (what `npm run up` creates and the snake's SNAKE_PATHWAY points at). */
export const DECISION_PATHWAY_NAME = 'snake-decider';

/**
 * The offline decision rules as a JSONata expression over the run's input `{ state }`: every heading
 * whose next cell is on the board and not the body (the tail cell is free unless the snake eats), with
 * its distance to the fruit. Mirrors `isSafe` in state.ts; test/snake checks both agree.
 */
const SAFE_MOVES_EXPRESSION = `(
  $s := input.state;
  $h := $s.snake[0];
  $f := $s.fruit;
  $n := $count($s.snake);
  $eats := function($c) { $exists($f.x) and $f.x = $c.x and $f.y = $c.y };
  $hits := function($c) { $count($filter($s.snake, function($b, $i) { $i > 0 and ($i < $n - 1 or $eats($c)) and $b.x = $c.x and $b.y = $c.y })) > 0 };
  $cells := [
    { "heading": "up", "x": $h.x, "y": $h.y - 1 },
    { "heading": "right", "x": $h.x + 1, "y": $h.y },
    { "heading": "down", "x": $h.x, "y": $h.y + 1 },
    { "heading": "left", "x": $h.x - 1, "y": $h.y }
  ];
  $safe := $filter($cells, function($c) { $c.x >= 0 and $c.y >= 0 and $c.x < $s.width and $c.y < $s.height and $not($hits($c)) });
  $dist := function($c) { $abs($f.x - $c.x) + $abs($f.y - $c.y) };
  $closer := $exists($f.x) ? $filter($safe, function($c) { $dist($c) < $dist($h) }) : [];
  {
    "current": $s.heading,
    "safe": [$safe.heading],
    "closer": [$closer.heading]
  }
)`;

/**
 * The decision pathway's graph. Offline (`rules`): a transform lists the safe and the fruit-ward moves,
 * an if node asks whether one gets closer to the fruit, and a transform on each branch picks the heading
 * (closer, keeping the current heading when it is one; else the current heading when safe, else the
 * first safe one). With a model (`model`): a neuron node asks the decision neuron. Either way the run's
 * output is the heading, and every tick is one pathwayRun in the Temporal UI.
 */
function decisionGraph(mode: 'rules' | 'model', neuronId?: string): PathwayGraph {
  if (mode === 'model') {
    if (!neuronId) throw new Error('the model decision graph needs the decision neuron');
    return {
      nodes: [
        { id: 'start', type: 'start' },
        { id: 'ask', type: 'neuron', data: { neuron_id: neuronId, message: '{{ input.message }}' } },
        { id: 'heading', type: 'output' },
      ],
      edges: [
        { source: 'start', target: 'ask' },
        { source: 'ask', target: 'heading' },
      ],
    };
  }
  return {
    nodes: [
      { id: 'start', type: 'start' },
      { id: 'moves', type: 'transform', data: { expression: SAFE_MOVES_EXPRESSION } },
      { id: 'toward-fruit', type: 'if', data: { condition: '$count(last.closer) > 0' } },
      {
        id: 'chase',
        type: 'transform',
        data: {
          expression:
            '{ "heading": last.current in last.closer ? last.current : last.closer[0], "why": "closer to the fruit" }',
        },
      },
      {
        id: 'survive',
        type: 'transform',
        data: {
          expression:
            '{ "heading": last.current in last.safe ? last.current : ($count(last.safe) > 0 ? last.safe[0] : last.current), "why": $count(last.safe) > 0 ? "a safe move" : "no safe move" }',
        },
      },
      { id: 'heading', type: 'output' },
    ],
    edges: [
      { source: 'start', target: 'moves' },
      { source: 'moves', target: 'toward-fruit' },
      { source: 'toward-fruit', target: 'chase', handle: 'true' },
      { source: 'toward-fruit', target: 'survive', handle: 'false' },
      { source: 'chase', target: 'heading' },
      { source: 'survive', target: 'heading' },
    ],
  };
}

/** A model id that needs no key (`local/…`) cannot steer: the rules decide instead. */
const decidesWithModel = (model: string): boolean => !model.startsWith('local/');

export interface EnsureDecisionPathwayResult {
  id: string;
  name: string;
  uses: 'rules' | 'model';
  created: boolean;
  updated: boolean;
}

/**
 * Makes sure the decision pathway exists and decides the way the configuration says: a neuron node
 * (the decision neuron, created too) when `model` needs a provider, else the offline rules. An
 * existing pathway of the other kind gets the right graph as a new version; one of the right kind is
 * left as it is.
 */
export async function ensureDecisionPathway(opts: EnsureDecisionNeuronOptions): Promise<EnsureDecisionPathwayResult> {
  const { apiKey, brainId, model, fetch: doFetch = globalThis.fetch } = opts;
  const name = DECISION_PATHWAY_NAME;
  const client = createCortexClient({ baseUrl: opts.apiUrl, apiKey, brainId, fetch: doFetch });
  const fail = (what: string, e: unknown) =>
    new Error(
      `ensureDecisionPathway: ${what}: ${String(e instanceof Error ? e.message : e)
        .split(apiKey)
        .join('[redacted]')}`,
    );
  const uses = decidesWithModel(model) ? 'model' : 'rules';
  let neuronId: string | undefined;
  if (uses === 'model') {
    const n = await ensureDecisionNeuron(opts);
    neuronId = n.id ?? (await client.api.GET('/v1/neurons/{id}', { params: { path: { id: n.name } } })).data?.id;
    if (!neuronId) throw fail('the decision neuron', 'not found after creation');
  }
  const graph = decisionGraph(uses, neuronId);
  const list = await client.api.GET('/v1/pathways', {
    params: { query: { search: name, limit: 50 }, header: { 'x-brain-id': brainId } },
  });
  if (!list.data) throw fail('GET /v1/pathways', list.response.status);
  const found = (list.data.pathways as { id: string; name: string }[]).find((p) => p.name === name);
  if (!found) {
    const created = await client.api.POST('/v1/pathways', {
      params: { header: { 'x-brain-id': brainId } },
      body: { name, description: "Decides the snake demo's next heading on every tick.", pathway_graph: graph },
    });
    if (!created.data) throw fail('POST /v1/pathways', JSON.stringify(created.error));
    return { id: created.data.id, name, uses, created: true, updated: false };
  }
  const current = await client.api.GET('/v1/pathways/{id}', { params: { path: { id: found.id } } });
  const hasNeuron = Boolean(
    (current.data?.pathway_graph as { nodes?: { type?: string }[] } | undefined)?.nodes?.some(
      (n) => n.type === 'neuron',
    ),
  );
  if (hasNeuron === (uses === 'model')) return { id: found.id, name, uses, created: false, updated: false };
  const put = await client.api.PUT('/v1/pathways/{id}', {
    params: { path: { id: found.id } },
    body: { pathway_graph: graph },
  });
  if (!put.data) throw fail('PUT /v1/pathways', JSON.stringify(put.error));
  return { id: found.id, name, uses, created: false, updated: true };
}
