import { afterAll, beforeAll } from 'vitest';
import type { Config } from '../../src/kernel/config.js';
import { startTestApp, type TestApp } from './app.js';
import { startProviderSim, type ProviderSim, type ProviderSimOptions } from './provider-sim.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from './scripted-openai.js';
import { startTestWorker } from './worker.js';

export interface TestPlatform<L extends ScriptedOpenAI = ScriptedOpenAI> {
  app: TestApp & { close(): Promise<void> };
  llm: L;
  close(): Promise<void>;
}

/**
 * The whole platform for a test file: an OpenAI-compatible provider on loopback (the scripted
 * one by default, or the realistic simulator), the real app pointed at it, and a real Temporal
 * worker on the app's own task queue.
 */
export async function startPlatform<L extends ScriptedOpenAI = ScriptedOpenAI>(
  provider: () => Promise<L> = startScriptedOpenAI as () => Promise<L>,
  config: Partial<Config> = {},
): Promise<TestPlatform<L>> {
  const llm = await provider();
  const app = await startTestApp({ OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test-key', ...config });
  const worker = await startTestWorker(app);
  return {
    app,
    llm,
    async close() {
      await worker.stop();
      await app.close();
      await llm.close();
    },
  };
}

function useRunning<L extends ScriptedOpenAI>(
  provider?: () => Promise<L>,
  config: Partial<Config> = {},
): { app: TestApp & { close(): Promise<void> }; llm: L } {
  let running: TestPlatform<L> | undefined;
  beforeAll(async () => {
    running = await startPlatform(provider, config);
  });
  afterAll(async () => {
    await running?.close();
  });
  const forward = <T extends object>(pick: (p: TestPlatform<L>) => T): T =>
    new Proxy({} as T, { get: (_, k) => Reflect.get(pick(running!), k, pick(running!)) as unknown });
  return { app: forward((p) => p.app), llm: forward((p) => p.llm) };
}

/**
 * vitest fixture: the whole platform for one test file, started before its tests and stopped
 * after. The returned app and llm are stand-ins that forward to the running ones.
 */
export function usePlatform(config: Partial<Config> = {}): {
  app: TestApp & { close(): Promise<void> };
  llm: ScriptedOpenAI;
} {
  return useRunning(undefined, config);
}

/** The same, on the realistic provider simulator (durability and liveness tests). */
export function useSimPlatform(
  opts: ProviderSimOptions,
  config: Partial<Config> = {},
): { app: TestApp & { close(): Promise<void> }; sim: ProviderSim } {
  const { app, llm } = useRunning(() => startProviderSim(opts), config);
  return { app, sim: llm };
}
