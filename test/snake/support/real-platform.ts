import { ensureDecisionNeuron } from '../../../snake/provision.js';
import { buildWorkspace } from '../../support/app.js';
import { startPlatform } from '../../support/platform.js';
import { lastUserText, type ScriptedReply, type ScriptedRequestBody } from '../../support/scripted-openai.js';

/** How the decision model answers one tick. */
export type Script =
  | { text: string; delayMs?: number } // the model replies with this text after delayMs
  | { fail: string; delayMs?: number } // the provider answers 400 with this message: the job fails
  | { hang: true } // the provider never answers in time
  | { http: { status: number; body: unknown } }; // the provider answers an error whose text echoes body

/** What the decision model was asked, for assertions. */
export interface InvokeRecord {
  neuron: string;
  message: string;
  data: unknown;
}

/** The platform behind the snake tests. */
export interface TestPlatform {
  apiUrl: string;
  apiKey: string;
  brainId: string;
  neuron: string;
  /** Sets how the decision model answers from now on; it gets the tick's message and data (the SnakeState). */
  script(fn: (req: { message: string; data: unknown }) => Script): void;
  invokes: InvokeRecord[];
  close(): Promise<void>;
}

const DATA_MARKER = 'Structured input (JSON):\n';

/** The SnakeState the platform put into the system prompt of the decision neuron's model turn. */
function dataOf(body: ScriptedRequestBody): unknown {
  const system = String(body.messages.find((m) => m.role === 'system')?.content ?? '');
  const at = system.indexOf(DATA_MARKER);
  if (at < 0) return undefined;
  const rest = system.slice(at + DATA_MARKER.length).split('\n\n')[0];
  try {
    return JSON.parse(rest);
  } catch {
    return undefined;
  }
}

/** Maps a snake test's agent script onto the scripted OpenAI-compatible server. */
function toReply(s: Script): ScriptedReply {
  if ('text' in s) return { text: s.text, ...(s.delayMs ? { hangMs: s.delayMs } : {}) };
  // A 400 from the provider is a permanent failure: the job fails at once (a 5xx would be retried by Temporal).
  if ('fail' in s) return { status: 400, errorMessage: s.fail, ...(s.delayMs ? { hangMs: s.delayMs } : {}) };
  if ('hang' in s) return { hangMs: 120_000, text: 'up' };
  // An upstream error whose text echoes something (the leak test puts the key in it) reaches the
  // snake as the job's failedReason, which the snake service must scrub.
  return { status: 400, errorMessage: typeof s.http.body === 'string' ? s.http.body : JSON.stringify(s.http.body) };
}

/**
 * The real platform behind the snake tests: the Koa API on a loopback port over FerretDB,
 * Redis and the Temporal dev server, a real worker, and the scripted OpenAI-compatible
 * provider answering the decision neuron (created by the same ensureDecisionNeuron that
 * `npm run up` uses).
 */
export async function startRealPlatform(): Promise<TestPlatform> {
  const platform = await startPlatform();
  const { app, llm } = platform;
  const ws = await buildWorkspace(app);
  const neuron = await ensureDecisionNeuron({
    apiUrl: app.url,
    apiKey: ws.key,
    brainId: ws.brainId,
    model: 'openai/gpt-4o-mini',
  });
  if (neuron instanceof Error) throw neuron;
  const invokes: InvokeRecord[] = [];
  let answer: (req: { message: string; data: unknown }) => Script = () => ({ text: 'up' });
  llm.setDefault((body) => {
    const req = { message: lastUserText(body), data: dataOf(body) };
    invokes.push({ neuron: 'snake-decider', ...req });
    return toReply(answer(req));
  });
  return {
    apiUrl: app.url,
    apiKey: ws.key,
    brainId: ws.brainId,
    neuron: 'snake-decider',
    invokes,
    script(fn) {
      answer = fn;
    },
    close: () => platform.close(),
  };
}
