import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * A small stand-in for the Cortex public API on loopback, implementing only what the snake service uses:
 * neuron invoke, job status, and neuron get/create for provisioning. It checks the bearer key and brain
 * header like the real API, records every invoke, and lets each test script the decision agent.
 *
 * Pointing the snake tests at the real platform: implement TestPlatform over the running API (apiUrl,
 * a workspace key, a brain, the neuron made by ensureDecisionNeuron with a model served by
 * test/support/scripted-openai.ts) and back `script` with that server's `setDefault`, mapping
 * `text` -> `{ text }`, `delayMs`/`hang` -> `{ hangMs }`, `fail` -> `{ status: 500, errorMessage }`; pass the
 * last user message as `message` (the answerers in these tests only read `message`, except where they
 * assert on `data`). `invokes` becomes the scripted server's `requests`. Only `http` (an error status on
 * the invoke itself) and the neuron store have no real-platform equivalent; those tests skip unless
 * `kind === 'fake'`.
 */

/** How the agent answers one invoke. */
export type Script =
  | { text: string; delayMs?: number } // job completes with result.text after delayMs
  | { fail: string; delayMs?: number } // job fails with this failedReason
  | { hang: true } // job stays running forever
  | { http: { status: number; body: unknown } }; // the invoke request itself answers this

/** What the agent saw, for assertions. */
export interface InvokeRecord {
  neuron: string;
  message: string;
  data: unknown;
  headers: IncomingMessage['headers'];
}

/** The contract the snake tests rely on, whichever platform is behind it. */
export interface TestPlatform {
  apiUrl: string;
  apiKey: string;
  brainId: string;
  neuron: string;
  kind: 'fake' | 'real';
  /** Sets how the agent answers from now on; gets the invoke's message and data (the SnakeState). */
  script(fn: (req: { message: string; data: unknown }) => Script): void;
  invokes: InvokeRecord[];
  close(): Promise<void>;
}

interface Job {
  script: Script;
  created: number;
}

/** Starts the fake platform on 127.0.0.1, port 0. */
export async function startFakePlatform(opts: { apiKey?: string; brainId?: string; neuron?: string } = {}) {
  const apiKey = opts.apiKey ?? `sk-cortex-test-${randomUUID()}`;
  const brainId = opts.brainId ?? randomUUID();
  const neuronName = opts.neuron ?? 'snake-decider';
  const jobs = new Map<string, Job>();
  const neurons = new Map<string, Record<string, unknown>>();
  const invokes: InvokeRecord[] = [];
  let answer: (req: { message: string; data: unknown }) => Script = () => ({ text: 'up' });

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const raw = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://x');
      const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);

      if (req.headers.authorization !== `Bearer ${apiKey}`) return send(res, 401, { message: 'Invalid API key', code: 'AUTH_REQUIRED' });
      if (req.headers['x-brain-id'] !== brainId) return send(res, 404, { message: 'Brain not found', code: 'NOT_FOUND' });

      // POST /v1/neurons/:idOrSlug/invoke
      if (req.method === 'POST' && parts.length === 4 && parts[1] === 'neurons' && parts[3] === 'invoke') {
        if (parts[2] !== neuronName && !neurons.has(parts[2])) return send(res, 404, { message: 'Neuron not found', code: 'NOT_FOUND' });
        const body = JSON.parse(raw) as { message: string; data: unknown };
        invokes.push({ neuron: parts[2], message: body.message, data: body.data, headers: req.headers });
        const script = answer(body);
        if ('http' in script) return send(res, script.http.status, script.http.body);
        const jobId = randomUUID();
        jobs.set(jobId, { script, created: Date.now() });
        return send(res, 202, { job_id: jobId, status: 'pending', user_engram_id: randomUUID() });
      }
      // GET /v1/jobs/:id/status
      if (req.method === 'GET' && parts.length === 4 && parts[1] === 'jobs' && parts[3] === 'status') {
        const job = jobs.get(parts[2]);
        if (!job) return send(res, 404, { message: 'Job not found', code: 'NOT_FOUND' });
        const s = job.script;
        const base = { job_id: parts[2], progress: 0, current_step: 'model' };
        if ('hang' in s || ('delayMs' in s && Date.now() - job.created < (s.delayMs ?? 0))) return send(res, 200, { ...base, status: 'running' });
        if ('fail' in s) return send(res, 200, { ...base, status: 'failed', progress: 100, failedReason: s.fail });
        if ('text' in s) return send(res, 200, { ...base, status: 'completed', progress: 100, result: { text: s.text } });
      }
      // GET /v1/neurons/:idOrSlug and POST /v1/neurons (provisioning)
      if (req.method === 'GET' && parts.length === 3 && parts[1] === 'neurons') {
        const n = neurons.get(parts[2]);
        return n ? send(res, 200, n) : send(res, 404, { message: 'Neuron not found', code: 'NOT_FOUND' });
      }
      if (req.method === 'POST' && parts.length === 2 && parts[1] === 'neurons') {
        const body = JSON.parse(raw) as { name: string };
        if (neurons.has(body.name)) return send(res, 409, { message: 'Already exists', code: 'CONFLICT' });
        const neuron = { id: randomUUID(), ...body };
        neurons.set(body.name, neuron);
        return send(res, 201, neuron);
      }
      return send(res, 404, { message: 'Route not found', code: 'NOT_FOUND' });
    })().catch((err: unknown) => send(res, 500, { message: String(err), code: 'INTERNAL_SERVER_ERROR' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    apiUrl: `http://127.0.0.1:${port}`,
    apiKey,
    brainId,
    neuron: neuronName,
    kind: 'fake' as const,
    script: (fn: (req: { message: string; data: unknown }) => Script) => void (answer = fn),
    invokes,
    /** Provisioned neurons, keyed by name (fake only). */
    neurons,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  } satisfies TestPlatform & { neurons: Map<string, Record<string, unknown>> };
}
