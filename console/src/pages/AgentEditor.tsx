import { useEffect, useState, type FormEvent } from 'react';
import { qs, toProblem, type ApiProblem, type ApiSchema, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { Problem } from '../components/ui';
import { Link, navigate } from '../router';
import '../pathways.css';
import '../agents.css';

/*
 * Create or edit an agent (a neuron): name, description, the model (from GET /v1/config/models: the
 * providers the platform has configured), its instructions (the charter, neuron_config.system_prompt),
 * temperature, max tokens, the fallback models tried in order when the model fails (fallback_models, from the
 * same configured models), the tool calls that wait for a person (tool_approval: every tool or the named
 * ones, with an optional timeout), knowledge (assets of the brain: resource_ids), sub-neurons (other agents
 * it may delegate to: sub_neuron_ids), built-in tools and its scope. POST /v1/neurons creates version 1;
 * PUT /v1/neurons/:id records a new version (neuron_config is replaced whole, so the fields this
 * form does not show are sent back as they were). Scopes the caller's roles do not allow are not offered.
 */
type Neuron = ApiSchema<'Neuron'>;
type Config = Neuron['neuron_config'];

interface Form {
  name: string;
  description: string;
  model: string;
  system_prompt: string;
  temperature: string;
  max_tokens: string;
  resource_ids: string[];
  sub_neuron_ids: string[];
  tools: string;
  fallback_models: string[];
  /** none: no call waits; all: every call; some: the tools named in approval_tools. */
  approval: 'none' | 'all' | 'some';
  approval_tools: string;
  approval_timeout_s: string;
  scope: Neuron['scope'];
  is_active: boolean;
}

/** How many fallback models a neuron may have (neuron_config.fallback_models, docs/neurons.md). */
const MAX_FALLBACKS = 5;

const EMPTY: Form = {
  name: '',
  description: '',
  model: '',
  system_prompt: '',
  temperature: '',
  max_tokens: '',
  resource_ids: [],
  sub_neuron_ids: [],
  tools: '',
  fallback_models: [],
  approval: 'none',
  approval_tools: '',
  approval_timeout_s: '',
  scope: 'brain',
  is_active: true,
};

function formOf(n: Neuron): Form {
  const c = n.neuron_config;
  return {
    name: n.name,
    description: n.description,
    model: c.model ?? '',
    system_prompt: c.system_prompt ?? '',
    temperature: c.temperature === undefined ? '' : String(c.temperature),
    max_tokens: c.max_tokens === undefined ? '' : String(c.max_tokens),
    resource_ids: c.resource_ids ?? [],
    sub_neuron_ids: c.sub_neuron_ids ?? [],
    tools: (c.tools ?? []).join('\n'),
    fallback_models: c.fallback_models ?? [],
    approval: !c.tool_approval ? 'none' : c.tool_approval.tools === 'all' ? 'all' : 'some',
    approval_tools: Array.isArray(c.tool_approval?.tools) ? c.tool_approval.tools.join('\n') : '',
    approval_timeout_s: c.tool_approval?.timeout_s === undefined ? '' : String(c.tool_approval.timeout_s),
    scope: n.scope,
    is_active: n.is_active,
  };
}

/** The config to send: the form's fields over the ones it does not show (kept as loaded). */
function configOf(f: Form, base: Config = {}): Config {
  const {
    model: _m,
    system_prompt: _s,
    temperature: _t,
    max_tokens: _x,
    resource_ids: _r,
    sub_neuron_ids: _n,
    tools: _o,
    fallback_models: _f,
    tool_approval: _a,
    ...rest
  } = base;
  const lines = (text: string) =>
    text
      .split('\n')
      .map((t) => t.trim())
      .filter(Boolean);
  const tools = lines(f.tools);
  const approvalTools = lines(f.approval_tools);
  const fallbacks = f.fallback_models.filter(Boolean);
  const timeout = f.approval_timeout_s.trim();
  // "these tools" with no name is sent as it is, so the API names the field (tools: at least one).
  const tool_approval =
    f.approval === 'none'
      ? undefined
      : {
          tools: f.approval === 'all' ? ('all' as const) : approvalTools,
          ...(timeout !== '' ? { timeout_s: Number(timeout) } : {}),
        };
  return {
    ...rest,
    ...(f.model ? { model: f.model } : {}),
    ...(f.system_prompt ? { system_prompt: f.system_prompt } : {}),
    ...(f.temperature.trim() !== '' ? { temperature: Number(f.temperature) } : {}),
    ...(f.max_tokens.trim() !== '' ? { max_tokens: Number(f.max_tokens) } : {}),
    ...(f.resource_ids.length ? { resource_ids: f.resource_ids } : {}),
    ...(f.sub_neuron_ids.length ? { sub_neuron_ids: f.sub_neuron_ids } : {}),
    ...(tools.length ? { tools } : {}),
    ...(fallbacks.length ? { fallback_models: fallbacks } : {}),
    ...(tool_approval ? { tool_approval } : {}),
  };
}

export default function AgentEditor({ params }: { params: Record<string, string> }) {
  const id = params.id as string | undefined;
  const { api, session, credential } = useAuth();
  const roles = session.roles;
  const [loaded, setLoaded] = useState<Neuron | null>(null);
  const [form, setForm] = useState<Form>(EMPTY);
  const [models, setModels] = useState<{ model: string; provider: string }[]>([]);
  const [assets, setAssets] = useState<{ id: string; name: string; path: string }[]>([]);
  const [others, setOthers] = useState<{ id: string; name: string }[]>([]);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    api
      .get<ResponseOf<'get', '/v1/config/models'>>('/v1/config/models', signal)
      .then((r) => setModels(r.models))
      .catch(() => undefined);
    api
      .get<{ assets: { id: string; name: string; path: string }[] }>(`/v1/assets${qs({ limit: 200 })}`, signal)
      .then((r) => setAssets(r.assets))
      .catch(() => undefined);
    if (credential.brainId)
      api
        .get<ApiSchema<'NeuronList'>>(`/v1/neurons${qs({ limit: 100, sortBy: 'name', sortDirection: 'asc' })}`, signal)
        .then((r) => setOthers(r.neurons.filter((n) => n.id !== id).map((n) => ({ id: n.id, name: n.name }))))
        .catch(() => undefined);
    if (id)
      api
        .get<Neuron>(`/v1/neurons/${id}`, signal)
        .then((n) => {
          setLoaded(n);
          setForm(formOf(n));
        })
        .catch((e: unknown) => !signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, id, credential.brainId]);

  const set = <K extends keyof Form>(k: K, v: Form[K]) => setForm((f) => ({ ...f, [k]: v }));
  const setFallback = (i: number, v: string) =>
    setForm((f) => ({ ...f, fallback_models: f.fallback_models.map((m, j) => (j === i ? v : m)) }));
  const moveFallback = (i: number) =>
    setForm((f) => {
      const list = [...f.fallback_models];
      [list[i - 1], list[i]] = [list[i] as string, list[i - 1] as string];
      return { ...f, fallback_models: list };
    });
  const toggle = (k: 'resource_ids' | 'sub_neuron_ids', v: string, on: boolean) =>
    setForm((f) => ({ ...f, [k]: on ? [...f[k], v] : f[k].filter((x) => x !== v) }));
  const scopes = [
    'brain',
    ...(roles.includes('workspace_admin') || roles.includes('core_admin') ? ['workspace'] : []),
    ...(roles.includes('core_admin') ? ['core'] : []),
  ];
  // A neuron of a scope the caller may not set is not theirs to change (the API would answer 403).
  const mayEdit = !loaded || scopes.includes(loaded.scope);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    try {
      const neuron_config = configOf(form, loaded?.neuron_config);
      const body = {
        name: form.name,
        description: form.description,
        neuron_config,
        scope: form.scope,
        is_active: form.is_active,
      };
      const saved = loaded
        ? await api.raw<Neuron>('PUT', `/v1/neurons/${loaded.id}`, body)
        : await api.post<Neuron>('/v1/neurons', { ...body, brain_id: credential.brainId });
      navigate(`/agents/${saved.id}`);
    } catch (err) {
      setProblem(toProblem(err));
      setBusy(false);
    }
  };

  if (id && !loaded && !problem) return <p className="muted">Loading…</p>;
  if (loaded && !mayEdit)
    return (
      <p role="status" className="muted">
        This agent has scope {loaded.scope}: changing it needs the role{' '}
        {loaded.scope === 'core' ? 'core_admin' : 'workspace_admin'}. <Link to={`/agents/${loaded.id}`}>Back</Link>
      </p>
    );
  const modelKnown = !form.model || models.some((m) => m.model === form.model);
  return (
    <>
      <div className="page-head">
        <h1>{loaded ? `Edit ${loaded.name}` : 'New agent'}</h1>
        {loaded && <span className="muted">saving records version {loaded.latest_version + 1}</span>}
      </div>
      <form className="card agent-form" onSubmit={(e) => void submit(e)}>
        <label>
          Name
          <input required maxLength={200} value={form.name} onChange={(e) => set('name', e.target.value)} />
        </label>
        <label>
          Description
          <input maxLength={5000} value={form.description} onChange={(e) => set('description', e.target.value)} />
        </label>
        <label>
          Model
          <select value={form.model} onChange={(e) => set('model', e.target.value)}>
            <option value="">the platform default</option>
            {!modelKnown && <option value={form.model}>{form.model} (not configured)</option>}
            {models.map((m) => (
              <option key={m.model} value={m.model}>
                {m.model}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Fallback models</legend>
          <p className="muted small">
            Tried in this order when the model fails after its retries (docs/neurons.md, "Model fallbacks").
          </p>
          <ol className="fallback-list">
            {form.fallback_models.map((m, i) => (
              <li key={i}>
                <select
                  aria-label={`Fallback model ${i + 1}`}
                  value={m}
                  onChange={(e) => setFallback(i, e.target.value)}
                >
                  <option value="">choose a model</option>
                  {m && !models.some((x) => x.model === m) && <option value={m}>{m} (not configured)</option>}
                  {models.map((x) => (
                    <option key={x.model} value={x.model}>
                      {x.model}
                    </option>
                  ))}
                </select>
                <button
                  type="button"
                  className="small"
                  aria-label={`Move fallback model ${i + 1} up`}
                  disabled={i === 0}
                  onClick={() => moveFallback(i)}
                >
                  ↑
                </button>
                <button
                  type="button"
                  className="small"
                  aria-label={`Remove fallback model ${i + 1}`}
                  onClick={() =>
                    set(
                      'fallback_models',
                      form.fallback_models.filter((_, j) => j !== i),
                    )
                  }
                >
                  Remove
                </button>
              </li>
            ))}
          </ol>
          <button
            type="button"
            className="small"
            disabled={form.fallback_models.length >= MAX_FALLBACKS}
            onClick={() => set('fallback_models', [...form.fallback_models, ''])}
          >
            Add fallback model
          </button>
        </fieldset>
        <label>
          Instructions (charter)
          <textarea
            rows={8}
            value={form.system_prompt}
            onChange={(e) => set('system_prompt', e.target.value)}
            placeholder="Purpose, domain, what it owns, when it delegates"
          />
        </label>
        <div className="agent-row">
          <label>
            Temperature
            <input
              type="number"
              min={0}
              max={2}
              step={0.1}
              value={form.temperature}
              onChange={(e) => set('temperature', e.target.value)}
            />
          </label>
          <label>
            Max tokens
            <input
              type="number"
              min={1}
              max={200000}
              step={1}
              value={form.max_tokens}
              onChange={(e) => set('max_tokens', e.target.value)}
            />
          </label>
          <label>
            Scope
            <select value={form.scope} onChange={(e) => set('scope', e.target.value as Form['scope'])}>
              {scopes.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
        </div>
        <fieldset>
          <legend>Knowledge</legend>
          {assets.length === 0 && <p className="muted small">No assets yet: upload them on the Knowledge page.</p>}
          <ul className="check-list" aria-label="Knowledge">
            {assets.map((a) => (
              <li key={a.id}>
                <label>
                  <input
                    type="checkbox"
                    checked={form.resource_ids.includes(a.id)}
                    onChange={(e) => toggle('resource_ids', a.id, e.target.checked)}
                  />{' '}
                  {a.path ? `${a.path}/` : ''}
                  {a.name}
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        <fieldset>
          <legend>Sub-agents it may delegate to</legend>
          {others.length === 0 && <p className="muted small">No other agents in this brain.</p>}
          <ul className="check-list" aria-label="Sub-agents">
            {others.map((n) => (
              <li key={n.id}>
                <label>
                  <input
                    type="checkbox"
                    checked={form.sub_neuron_ids.includes(n.id)}
                    onChange={(e) => toggle('sub_neuron_ids', n.id, e.target.checked)}
                  />{' '}
                  {n.name}
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        <label>
          Built-in tools (one per line)
          <textarea rows={2} value={form.tools} onChange={(e) => set('tools', e.target.value)} />
        </label>
        <fieldset>
          <legend>Tool calls that wait for a person</legend>
          <div className="radio-row" role="radiogroup" aria-label="Tool approval">
            {(
              [
                ['none', 'none'],
                ['all', 'every tool call'],
                ['some', 'calls of these tools'],
              ] as const
            ).map(([v, label]) => (
              <label key={v}>
                <input
                  type="radio"
                  name="tool-approval"
                  value={v}
                  checked={form.approval === v}
                  onChange={() => set('approval', v)}
                />{' '}
                {label}
              </label>
            ))}
          </div>
          {form.approval === 'some' && (
            <label className="stacked">
              Tools that wait (one per line, as offered to the model, delegate_* included)
              <textarea rows={2} value={form.approval_tools} onChange={(e) => set('approval_tools', e.target.value)} />
            </label>
          )}
          {form.approval !== 'none' && (
            <label className="stacked">
              Answer within (seconds; empty: no limit, a call waits until answered)
              <input
                type="number"
                min={1}
                max={30 * 24 * 3600}
                step={1}
                value={form.approval_timeout_s}
                onChange={(e) => set('approval_timeout_s', e.target.value)}
              />
            </label>
          )}
          <p className="muted small">
            Each such call opens a tool_call approval (approve, edit, reject) in the Approvals inbox; no answer in time
            counts as a rejection.
          </p>
        </fieldset>
        <label className="inline">
          <input type="checkbox" checked={form.is_active} onChange={(e) => set('is_active', e.target.checked)} /> Active
          (an inactive agent cannot be invoked)
        </label>
        <Problem problem={problem} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy || !form.name.trim()}>
            {loaded ? 'Save new version' : 'Create agent'}
          </button>
          <Link to={loaded ? `/agents/${loaded.id}` : '/agents'}>Cancel</Link>
        </div>
      </form>
    </>
  );
}
