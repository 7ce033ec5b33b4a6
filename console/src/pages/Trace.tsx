import { useEffect, useRef, useState } from 'react';
import { JobReply, toProblem, type ApiProblem, type Engram, type Trace as TraceDoc, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { Json, Problem, Section, ago, shortId, useTick } from '../components/ui';
import { Link } from '../router';

/*
 * A trace as a conversation: its engrams (human and neuron turns, tool calls folded under the turn
 * that made them), its title and cost summary, following the trace's events live
 * (GET /v1/traces/:id/events: new engrams, title changes, run state). A run that starts on the trace
 * has its job stream followed too, so its reply shows as it streams (the trace stream carries no
 * tokens: docs/streams.md) until its engram arrives.
 */
interface Live {
  jobId: string;
  text: string;
  state: 'running' | 'waiting';
}

type ToolCall = { name?: string; arguments?: unknown; result?: unknown };

export default function Trace({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api } = useAuth();
  const now = useTick(10_000);
  const [trace, setTrace] = useState<TraceDoc | null>(null);
  const [engrams, setEngrams] = useState<Engram[]>([]);
  const [live, setLive] = useState<Record<string, Live>>({});
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [following, setFollowing] = useState(false);
  const followed = useRef(new Set<string>());

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    followed.current = new Set();
    setLive({});
    const refreshTrace = () =>
      api
        .get<{ trace: TraceDoc }>(`/v1/traces/${id}`, signal)
        .then((b) => setTrace(b.trace))
        .catch(() => undefined);

    /** Follows one run's job stream while it runs: its reply, by the reset rule. */
    const followRun = async (jobId: string) => {
      if (followed.current.has(jobId)) return;
      followed.current.add(jobId);
      const reply = new JobReply();
      setLive((l) => ({ ...l, [jobId]: { jobId, text: '', state: 'running' } }));
      try {
        for await (const e of api.jobs.stream(jobId, { signal })) {
          if (reply.apply(e.data))
            setLive((l) => (l[jobId] ? { ...l, [jobId]: { ...l[jobId], text: reply.text } } : l));
          if (e.data.type === 'waiting' || e.data.type === 'paused')
            setLive((l) => (l[jobId] ? { ...l, [jobId]: { ...l[jobId], state: 'waiting' } } : l));
        }
      } catch {
        // the run's own page shows why; the engram (or run.failed) settles this view
      }
    };
    const settle = (jobId: string) =>
      setLive((l) => {
        const { [jobId]: _gone, ...rest } = l;
        return rest;
      });

    (async () => {
      const [t, m] = await Promise.all([
        api.get<ResponseOf<'get', '/v1/traces/{id}'>>(`/v1/traces/${id}`, signal).then((b) => b.trace),
        api.get<ResponseOf<'get', '/v1/traces/{id}/messages'>>(`/v1/traces/${id}/messages`, signal),
      ]);
      setTrace(t);
      setEngrams(m.engrams);
      const known = new Set(m.engrams.map((e) => e.id));
      // The event stream replays the trace's events from its start, then follows: engrams already
      // shown are skipped. A run whose reply is already shown has ended; another one's run.started
      // is followed a moment later unless its run.completed or run.failed came meanwhile (a replay
      // delivers them together), so an ended run does not flash as streaming.
      const ended = new Set(m.engrams.map((e) => e.metadata?.job_id).filter((j): j is string => typeof j === 'string'));
      const stream = api.traces.events(id, { signal, onConnect: () => setFollowing(true) });
      for await (const { data } of stream) {
        const d = data as Record<string, unknown> & { type: string };
        if (d.type === 'stream_reset') continue;
        if (d.type === 'engram.created' && typeof d.engram_id === 'string' && !known.has(d.engram_id)) {
          known.add(d.engram_id);
          // The entry carries the content; the stored engram (metadata: tool calls, usage) is read once.
          const full = await api.get<ResponseOf<'get', '/v1/traces/{id}/messages'>>(
            `/v1/traces/${id}/messages`,
            signal,
          );
          setEngrams(full.engrams);
          for (const e of full.engrams) known.add(e.id);
          if (d.source_type === 'neuron') {
            const job = full.engrams.find((e) => e.id === d.engram_id)?.metadata?.job_id;
            if (typeof job === 'string') {
              ended.add(job);
              settle(job);
            }
          }
          void refreshTrace();
        } else if (d.type === 'trace.updated') void refreshTrace();
        else if (d.type === 'run.started' || d.type === 'run.waiting') {
          const jobId = String(d.job_id);
          setTimeout(() => {
            if (!ended.has(jobId) && !signal.aborted) void followRun(jobId);
          }, 50);
        } else if (d.type === 'run.completed' || d.type === 'run.failed') {
          ended.add(String(d.job_id));
          // The stored engrams replace the streamed reply (a failed run leaves none).
          const full = await api.get<ResponseOf<'get', '/v1/traces/{id}/messages'>>(
            `/v1/traces/${id}/messages`,
            signal,
          );
          for (const e of full.engrams) known.add(e.id);
          setEngrams(full.engrams);
          settle(String(d.job_id));
          void refreshTrace();
        }
      }
    })().catch((e: unknown) => {
      if (!signal.aborted) setProblem(toProblem(e));
    });
    return () => abort.abort();
  }, [api, id]);

  const liveRuns = Object.values(live);
  return (
    <>
      <div className="page-head">
        <h1>{trace?.title || `Trace ${shortId(id)}`}</h1>
        {trace && (
          <p className="muted">
            {trace.message_count} messages · ${trace.cost_summary.total_cost_usd.toFixed(4)} ·{' '}
            {trace.cost_summary.total_tokens} tokens ({trace.cost_summary.input_tokens} in,{' '}
            {trace.cost_summary.output_tokens} out) · {following ? 'following live' : 'connecting…'}
          </p>
        )}
      </div>
      <Problem problem={problem} />
      <ol className="conversation" aria-live="polite">
        {engrams.map((e) => (
          <Turn key={e.id} e={e} now={now} />
        ))}
        {liveRuns.map((r) => (
          <li key={r.jobId} className="msg neuron streaming" data-job-id={r.jobId}>
            <div className="msg-head">
              <strong>neuron</strong>{' '}
              <span className="muted">
                {r.state === 'waiting' ? 'waiting for an answer' : 'replying…'} ·{' '}
                <Link to={`/runs/${r.jobId}`}>run {shortId(r.jobId)}</Link>
              </span>
            </div>
            <p className="reply">
              {r.text}
              <span className="caret" aria-hidden />
            </p>
          </li>
        ))}
      </ol>
      {engrams.length === 0 && liveRuns.length === 0 && !problem && <p className="muted">No messages yet.</p>}
      {trace && Object.keys(trace.metadata ?? {}).length > 0 && (
        <Section title="Metadata">
          <Json value={trace.metadata} />
        </Section>
      )}
    </>
  );
}

function Turn({ e, now }: { e: Engram; now: number }) {
  const who = e.source_type === 'user' ? 'human' : e.source_type;
  const tools = (Array.isArray(e.metadata?.tool_calls) ? e.metadata.tool_calls : []) as ToolCall[];
  const jobId = typeof e.metadata?.job_id === 'string' ? e.metadata.job_id : null;
  const usage = e.metadata?.usage as { costUsd?: number; totalTokens?: number } | undefined;
  return (
    <li className={`msg ${e.source_type === 'user' ? 'human' : 'neuron'}`} data-engram-id={e.id}>
      <div className="msg-head">
        <strong>{who}</strong>{' '}
        <span className="muted" title={e.created_at}>
          {ago(e.created_at, now)}
          {jobId && (
            <>
              {' '}
              · <Link to={`/runs/${jobId}`}>run {shortId(jobId)}</Link>
            </>
          )}
          {usage?.totalTokens !== undefined && ` · ${usage.totalTokens} tokens`}
        </span>
      </div>
      {tools.map((t, i) => (
        <details key={i} className="step-entry">
          <summary>Tool call: {t.name ?? 'tool'}</summary>
          <Json value={{ arguments: t.arguments, result: t.result }} />
        </details>
      ))}
      <p className="reply">{e.content.content}</p>
    </li>
  );
}
