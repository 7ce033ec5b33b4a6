import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react';
import { qs, toProblem, type ApiProblem, type Engram, type Job, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { Link, setQuery } from '../router';
import { applyEntry, emptyRun, type Entry } from '../run-state';
import { Json, Problem, shortId } from './ui';

/*
 * The agent's playground: a chat on a new trace or an existing one (`?trace=<id>`). A message is
 * POST /v1/neurons/:id/invoke (with the trace once there is one); the reply streams token by token
 * from the job stream (GET /v1/jobs/:id/stream, by the reset rule: run-state.ts), with the tool
 * calls and delegations the stream carries folded under it, the tokens of each model turn as
 * `progress` entries report them, and the turn's cost and tokens from the finished job's usage.
 * Stop cancels the job (POST /v1/jobs/:id/cancel); Retry sends the last message again as a new turn.
 * The version menu runs the next messages on an earlier version of the agent (invoke's `version`), in
 * the same conversation, so versions (and the models they name) can be compared answer by answer;
 * each reply says the version that ran and the model that answered (the job result's `model`).
 */
interface ChatTurn {
  key: string;
  human: string;
  jobId: string | null;
  reply: string;
  steps: Entry[];
  retried: number;
  tokens: number;
  cost: number | null;
  status: 'sending' | 'streaming' | 'completed' | 'failed' | 'cancelled';
  error?: string;
  /** The version asked for (null: the head). */
  version: number | null;
  /** The model that answered, from the finished job's result. */
  model?: string;
}

type Usage = { costUsd?: number; totalTokens?: number };

const usageOf = (result: unknown): Usage | null => {
  const u = (result as { usage?: unknown } | null | undefined)?.usage;
  return u && typeof u === 'object' ? (u as Usage) : null;
};

export function Playground({
  neuronId,
  active,
  versions = [],
  latest,
}: {
  neuronId: string;
  active: boolean;
  /** The agent's versions, to run an earlier one; none: the menu is not shown. */
  versions?: number[];
  latest?: number;
}) {
  const { api } = useAuth();
  const [version, setVersion] = useState<number | null>(null);
  const [traceId, setTraceId] = useState<string | null>(() => new URLSearchParams(window.location.search).get('trace'));
  const [history, setHistory] = useState<Engram[]>([]);
  const [turns, setTurns] = useState<ChatTurn[]>([]);
  const [text, setText] = useState('');
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [recent, setRecent] = useState<{ id: string; title?: string | null }[]>([]);
  const abort = useRef<AbortController | null>(null);
  const busy = turns.some((t) => t.status === 'sending' || t.status === 'streaming');
  const current = turns.find((t) => t.status === 'streaming' && t.jobId);

  useEffect(() => () => abort.current?.abort(), []);

  // An existing trace's earlier turns, once, when the playground opens on it.
  const [opened, setOpened] = useState(traceId);
  useEffect(() => {
    if (!opened) return;
    const a = new AbortController();
    api
      .get<ResponseOf<'get', '/v1/traces/{id}/messages'>>(`/v1/traces/${opened}/messages`, a.signal)
      .then((m) => setHistory(m.engrams))
      .catch((e: unknown) => !a.signal.aborted && setProblem(toProblem(e)));
    return () => a.abort();
  }, [api, opened]);

  // The agent's recent conversations, to continue one.
  useEffect(() => {
    const a = new AbortController();
    api
      .get<ResponseOf<'get', '/v1/traces'>>(`/v1/traces${qs({ neuron_id: neuronId, limit: 10 })}`, a.signal)
      .then((r) => setRecent(r.traces.map((t) => ({ id: t.id, title: t.title }))))
      .catch(() => undefined);
    return () => a.abort();
  }, [api, neuronId, traceId]);

  const patch = useCallback(
    (key: string, f: (t: ChatTurn) => Partial<ChatTurn>) =>
      setTurns((ts) => ts.map((t) => (t.key === key ? { ...t, ...f(t) } : t))),
    [],
  );

  const send = async (message: string) => {
    setProblem(null);
    const key = crypto.randomUUID();
    setTurns((ts) => [
      ...ts,
      {
        key,
        human: message,
        jobId: null,
        reply: '',
        steps: [],
        retried: 0,
        tokens: 0,
        cost: null,
        status: 'sending',
        version,
      },
    ]);
    let jobId: string;
    try {
      const r = await api.post<ResponseOf<'post', '/v1/neurons/{id}/invoke'>>(`/v1/neurons/${neuronId}/invoke`, {
        message,
        client_nonce: key,
        ...(traceId ? { trace_id: traceId } : {}),
        ...(version !== null ? { version } : {}),
      });
      jobId = r.job_id;
      if (r.trace_id !== traceId) {
        setTraceId(r.trace_id);
        setQuery({ trace: r.trace_id });
      }
    } catch (e) {
      setProblem(toProblem(e));
      setTurns((ts) => ts.filter((t) => t.key !== key));
      return;
    }
    patch(key, () => ({ jobId, status: 'streaming' }));
    const ctl = new AbortController();
    abort.current = ctl;
    const view = emptyRun();
    let tokens = 0;
    try {
      for await (const e of api.jobs.stream(jobId, { signal: ctl.signal })) {
        const d = e.data as Entry;
        applyEntry(view, d);
        if (d.type === 'progress') tokens += Number((d.usage as Usage | undefined)?.totalTokens ?? 0);
        const retried = [...view.turns.values()].reduce((n, t) => n + t.retries, 0);
        patch(key, () => ({ reply: view.reply, steps: [...view.steps], tokens, retried }));
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
      patch(key, () => ({ status: 'failed', error: toProblem(e).message }));
      return;
    }
    const t = view.terminal;
    const status: ChatTurn['status'] =
      t?.type === 'complete' ? 'completed' : t?.error === 'cancelled' ? 'cancelled' : 'failed';
    patch(key, () => ({ status, error: t?.type === 'error' ? String(t.message ?? t.error ?? '') : undefined }));
    // The turn's cost and tokens: the job result's usage (a sum over the usage ledger).
    try {
      const job = await api.get<Job>(`/v1/jobs/${jobId}`, ctl.signal);
      const u = usageOf(job.result);
      if (u) patch(key, (p) => ({ cost: u.costUsd ?? null, tokens: u.totalTokens ?? p.tokens }));
      const model = (job.result as { model?: unknown } | null | undefined)?.model;
      if (typeof model === 'string') patch(key, () => ({ model }));
    } catch {
      // the run page shows the job; the turn keeps what the stream said
    }
  };

  const stop = async () => {
    if (!current?.jobId) return;
    try {
      await api.post(`/v1/jobs/${current.jobId}/cancel`);
    } catch (e) {
      setProblem(toProblem(e));
    }
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const m = text.trim();
    if (!m || busy) return;
    setText('');
    void send(m);
  };

  const lastHuman = turns.length ? turns[turns.length - 1].human : null;
  const pinned = version !== null && version !== latest;
  const fresh = () => {
    abort.current?.abort();
    setTraceId(null);
    setOpened(null);
    setHistory([]);
    setTurns([]);
    setQuery({ trace: undefined });
  };
  const open = (id: string) => {
    abort.current?.abort();
    setTurns([]);
    setHistory([]);
    setTraceId(id);
    setOpened(id);
    setQuery({ trace: id });
  };

  return (
    <section className="card playground" aria-label="Playground">
      <header className="card-head">
        <h2>Playground</h2>
        <div className="buttons">
          {recent.length > 0 && (
            <select
              aria-label="Conversation"
              value={traceId ?? ''}
              onChange={(e) => (e.target.value ? open(e.target.value) : fresh())}
            >
              <option value="">a new conversation</option>
              {traceId && !recent.some((r) => r.id === traceId) && (
                <option value={traceId}>trace {shortId(traceId)}</option>
              )}
              {recent.map((r) => (
                <option key={r.id} value={r.id}>
                  {r.title || `trace ${shortId(r.id)}`}
                </option>
              ))}
            </select>
          )}
          {traceId && (
            <>
              <Link to={`/traces/${traceId}`}>Open trace</Link>
              <button type="button" onClick={fresh} disabled={busy}>
                New conversation
              </button>
            </>
          )}
        </div>
      </header>
      {!active && <p className="muted">This agent is inactive: activate it to talk to it.</p>}
      <ol className="conversation" aria-live="polite" aria-label="Conversation">
        {history.map((e) => (
          <li key={e.id} className={`msg ${e.source_type === 'user' ? 'human' : 'neuron'}`} data-engram-id={e.id}>
            <div className="msg-head">
              <strong>{e.source_type === 'user' ? 'you' : 'agent'}</strong>
            </div>
            <p className="reply">{e.content.content}</p>
          </li>
        ))}
        {turns.flatMap((t) => [
          <li key={`${t.key}-h`} className="msg human">
            <div className="msg-head">
              <strong>you</strong>
            </div>
            <p className="reply">{t.human}</p>
          </li>,
          <li
            key={`${t.key}-a`}
            className={`msg neuron ${t.status === 'streaming' ? 'streaming' : ''}`}
            data-status={t.status}
            data-job-id={t.jobId ?? undefined}
          >
            <div className="msg-head">
              <strong>agent</strong>{' '}
              <span className="muted">
                {t.status === 'sending' ? 'sending…' : t.status === 'streaming' ? 'replying…' : t.status}
                {t.jobId && (
                  <>
                    {' '}
                    · <Link to={`/runs/${t.jobId}`}>run {shortId(t.jobId)}</Link>
                  </>
                )}
                {t.retried > 0 && ` · retried ${t.retried}×`}
              </span>
              <span className="muted small turn-version" data-version={t.version ?? 'head'} data-model={t.model}>
                {' · '}
                {t.version === null ? 'head' : `v${t.version}`}
                {t.model && ` · ${t.model}`}
              </span>
            </div>
            {t.steps.map((s, i) => (
              <details key={i} className="step-entry" data-step={s.type}>
                <summary>
                  {s.type === 'tool'
                    ? `Tool call: ${String(s.name ?? 'tool')}`
                    : s.type === 'delegate'
                      ? `Delegated to ${String(s.neuron ?? 'a sub-agent')}`
                      : String(s.type)}
                </summary>
                {s.type === 'delegate' && typeof s.child_job_id === 'string' && (
                  <p>
                    <Link to={`/runs/${s.child_job_id}`}>its run {shortId(s.child_job_id)}</Link>
                  </p>
                )}
                <Json value={s.type === 'tool' ? { arguments: s.arguments, result: s.result } : s} />
              </details>
            ))}
            <p className="reply">
              {t.reply}
              {t.status === 'streaming' && <span className="caret" aria-hidden />}
            </p>
            {t.error && <p className="error">{t.error}</p>}
            {(t.tokens > 0 || t.cost !== null) && (
              <p className="muted small turn-usage" data-tokens={t.tokens} data-cost={t.cost ?? undefined}>
                {t.tokens} tokens{t.cost !== null && ` · $${t.cost.toFixed(6)}`}
              </p>
            )}
          </li>,
        ])}
      </ol>
      {history.length === 0 && turns.length === 0 && (
        <p className="muted">Say something to start a conversation; each message is a run you can open.</p>
      )}
      <Problem problem={problem} />
      <form className="chat-form" onSubmit={submit}>
        <label htmlFor="chat-message" className="sr-only">
          Message
        </label>
        <textarea
          id="chat-message"
          rows={2}
          value={text}
          disabled={!active}
          placeholder="Message the agent"
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) submit(e);
          }}
        />
        <div className="buttons">
          {versions.length > 1 && (
            <select
              aria-label="Version"
              value={version ?? ''}
              onChange={(e) => setVersion(e.target.value ? Number(e.target.value) : null)}
            >
              <option value="">head{latest ? ` (v${latest})` : ''}</option>
              {versions
                .filter((v) => v !== latest)
                .map((v) => (
                  <option key={v} value={v}>
                    v{v}
                  </option>
                ))}
            </select>
          )}
          {pinned && <span className="muted small">runs version {version}</span>}
          <button type="submit" className="primary" disabled={!active || busy || !text.trim()}>
            Send
          </button>
          {current && (
            <button type="button" className="danger" onClick={() => void stop()}>
              Stop
            </button>
          )}
          {!busy && lastHuman !== null && (
            <button type="button" disabled={!active} onClick={() => void send(lastHuman)}>
              Retry last message
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
