import { validationError } from '../kernel/errors.js';
import { createAnthropicProvider } from './anthropic.js';
import { createLocalProvider } from './local.js';
import { createOpenAIProvider } from './openai.js';
import type { ChatProvider } from './types.js';

/** Which providers to build; usually filled from Config (OPENAI_*, ANTHROPIC_*, DEFAULT_MODEL). */
export interface ModelRegistryOptions {
  /** Provider for bare model names (`gpt-4o` → `<defaultProvider>/gpt-4o`), e.g. `local`. */
  defaultProvider: string;
  /** The platform's default model id (DEFAULT_MODEL); listed by list() even if not in the price table. */
  defaultModel?: string;
  /** Registered when a base URL or an API key is set. */
  openai?: { baseURL?: string; apiKey?: string };
  /** Registered when an API key is set. */
  anthropic?: { apiKey?: string; baseURL?: string };
}

/** A model id resolved to the provider that serves it. */
export interface ResolvedModel {
  provider: ChatProvider;
  /** The model part, passed as ChatRequest.model. */
  model: string;
  /** Canonical `provider/model`, as stored on neurons and in usage rollups. */
  id: string;
}

/** One row of GET /v1/config/models. `model` is the full id, usable as a neuron's model. */
interface ListedModel {
  model: string;
  provider: string;
}

/** Options of register(). */
interface RegisterOptions {
  /**
   * Whether names outside provider.models() are accepted. True for endpoints whose model set is
   * open-ended (any name an OpenAI-compatible server serves); false for a fixed set like local/*,
   * so a typo fails at neuron creation instead of at the first run.
   */
  acceptsUnlisted?: boolean;
}

/** The model registry: the single place where `provider/model` strings become providers. */
export interface ModelRegistry {
  /** Throws a 400 validation error for an unknown provider or a model its provider rejects. */
  resolve(modelId: string): ResolvedModel;
  list(): ListedModel[];
  register(name: string, provider: ChatProvider, opts?: RegisterOptions): void;
}

/**
 * Builds the registry from configuration. `local` is always present so a fresh machine works
 * without keys; `openai` and `anthropic` exist only when configured, so a model id naming an
 * unconfigured provider is rejected up front (400) instead of failing later inside a workflow.
 * Model ids split at the first `/`: `openai/meta-llama/Llama-3` is model `meta-llama/Llama-3`
 * on `openai`, while a bare name containing `/` would be read as having a provider.
 */
export function createModelRegistry(opts: ModelRegistryOptions): ModelRegistry {
  const providers = new Map<string, { provider: ChatProvider; acceptsUnlisted: boolean }>();
  const register = (name: string, provider: ChatProvider, r: RegisterOptions = {}) => {
    providers.set(name, { provider, acceptsUnlisted: r.acceptsUnlisted ?? true });
  };

  const split = (modelId: string): { providerName: string; model: string } => {
    const slash = modelId.indexOf('/');
    return slash < 0
      ? { providerName: opts.defaultProvider, model: modelId }
      : { providerName: modelId.slice(0, slash), model: modelId.slice(slash + 1) };
  };

  register('local', createLocalProvider(), { acceptsUnlisted: false });
  const defaultParts = opts.defaultModel ? split(opts.defaultModel) : undefined;
  const extraFor = (p: string) => (defaultParts && defaultParts.providerName === p ? [defaultParts.model] : []);
  if (opts.openai?.baseURL || opts.openai?.apiKey) {
    register('openai', createOpenAIProvider({ ...opts.openai, models: extraFor('openai') }));
  }
  if (opts.anthropic?.apiKey) {
    register('anthropic', createAnthropicProvider({ ...opts.anthropic, models: extraFor('anthropic') }));
  }

  return {
    resolve(modelId: string): ResolvedModel {
      const { providerName, model } = split(modelId.trim());
      const entry = providers.get(providerName);
      if (!entry) {
        const known = [...providers.keys()].join(', ');
        throw validationError(
          `Unknown model provider "${providerName}" in "${modelId}"; configured providers: ${known}`,
        );
      }
      if (!model) throw validationError(`Model id "${modelId}" names no model; expected provider/model`);
      if (!entry.acceptsUnlisted && !entry.provider.models().includes(model)) {
        const names = entry.provider
          .models()
          .map((m) => `${providerName}/${m}`)
          .join(', ');
        throw validationError(`Unknown model "${providerName}/${model}"; available: ${names}`);
      }
      return { provider: entry.provider, model, id: `${providerName}/${model}` };
    },
    list(): ListedModel[] {
      return [...providers.entries()].flatMap(([provider, { provider: p }]) =>
        p.models().map((m) => ({ model: `${provider}/${m}`, provider })),
      );
    },
    register,
  };
}

/**
 * A neuron's fallback chain (`neuron_config.fallback_models`) resolved to canonical ids, in order:
 * each entry is checked as the main model is (known provider, `provider/model` form), and a
 * refusal names the entry (`neuron_config.fallback_models[1]: …`, 400).
 */
export function resolveFallbacks(
  registry: Pick<ModelRegistry, 'resolve'>,
  ids: readonly string[] | undefined,
): string[] {
  return (ids ?? []).map((id, i) => {
    try {
      return registry.resolve(id).id;
    } catch (e) {
      throw validationError(`neuron_config.fallback_models[${i}]: ${(e as Error).message}`);
    }
  });
}
