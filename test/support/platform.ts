import { afterAll, beforeAll } from 'vitest';
import { startTestApp, type TestApp } from './app.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from './scripted-openai.js';
import { startTestWorker } from './worker.js';

export interface TestPlatform { app: TestApp & { close(): Promise<void> }; llm: ScriptedOpenAI; close(): Promise<void> }

/**
 * The whole platform for a test file: the scripted OpenAI-compatible provider, the real app
 * pointed at it, and a real Temporal worker on the app's own task queue.
 */
export async function startPlatform(): Promise<TestPlatform> {
  const llm = await startScriptedOpenAI();
  const app = await startTestApp({ OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test-key' });
  const worker = await startTestWorker(app);
  return {
    app, llm,
    async close() {
      await worker.stop();
      await app.close();
      await llm.close();
    },
  };
}

/**
 * vitest fixture: the whole platform for one test file, started before its tests and stopped
 * after. The returned app and llm are stand-ins that forward to the running ones.
 */
export function usePlatform(): { app: TestApp & { close(): Promise<void> }; llm: ScriptedOpenAI } {
  let running: TestPlatform | undefined;
  beforeAll(async () => { running = await startPlatform(); });
  afterAll(async () => { await running?.close(); });
  const forward = <T extends object>(pick: (p: TestPlatform) => T): T =>
    new Proxy({} as T, { get: (_, k) => Reflect.get(pick(running!), k, pick(running!)) as unknown });
  return { app: forward((p) => p.app), llm: forward((p) => p.llm) };
}
