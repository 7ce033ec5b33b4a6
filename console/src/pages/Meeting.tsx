import { useState, type FormEvent } from 'react';
import { toProblem, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { Badge, Problem, Section, ago, useTick } from '../components/ui';
import { Link } from '../router';
import { usePoll } from '../use-poll';
import '../agents.css';

/*
 * One meeting (GET /v1/meetings/:id, docs/meetings.md): its agenda, summary, decisions and action
 * items, and its transcript (`body.transcript_segments`: speaker, start and text), refreshed while
 * a live transcription adds to it. Its title is renamed in place through the central patch
 * (POST /v1/resources/meeting/:id/patch { title, base_version }: the API's one way to change a
 * meeting; any member of the workspace may, as for creating one), conditional on the version shown
 * so that a change made meanwhile (a transcript landing) is a 409 to read again, not lost.
 */
type Meeting = ApiSchema<'Meeting'>;
type Segment = ApiSchema<'TranscriptSegment'>;

const clock = (ms: number | undefined) => {
  if (ms === undefined) return '';
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};
const list = (v: unknown): string[] =>
  Array.isArray(v)
    ? v.map((x) =>
        typeof x === 'string' ? x : typeof x === 'object' && x && 'text' in x ? String(x.text) : JSON.stringify(x),
      )
    : [];

export default function MeetingPage({ params }: { params: Record<string, string> }) {
  const { api } = useAuth();
  const now = useTick(10_000);
  const m = usePoll((signal) => api.get<Meeting>(`/v1/meetings/${params.id}`, signal), [api, params.id], 5_000);
  const d = m.data;
  const segments = (Array.isArray(d?.body.transcript_segments) ? d.body.transcript_segments : []) as Segment[];
  return (
    <>
      <p>
        <Link to="/workspace?tab=meetings">← Meetings</Link>
      </p>
      <Problem problem={m.problem} />
      {d && (
        <>
          <Title meeting={d} onSaved={m.reload} />
          {d.description && <p>{d.description}</p>}
          <p className="muted small">
            Version {d.version}, updated {ago(d.updated_at, now)}
          </p>
          {(['agenda', 'decisions', 'action_items'] as const).map((k) =>
            list(d.body[k]).length ? (
              <Section key={k} title={k === 'action_items' ? 'Action items' : k[0].toUpperCase() + k.slice(1)}>
                <ul>
                  {list(d.body[k]).map((x, i) => (
                    <li key={i}>{x}</li>
                  ))}
                </ul>
              </Section>
            ) : null,
          )}
          {typeof d.body.summary === 'string' && d.body.summary && (
            <Section title="Summary">
              <p>{d.body.summary}</p>
            </Section>
          )}
          <Section title="Transcript">
            {segments.length === 0 ? (
              <p className="muted">
                No transcript yet: a live transcription (<code>POST /v1/meetings/:id/transcription/start</code>) or a
                recording fills it.
              </p>
            ) : (
              <ol className="transcript" aria-label="Transcript">
                {segments.map((s, i) => (
                  <li key={i} data-speaker={s.speaker}>
                    <span className="muted small">{clock(s.start_ms)}</span> <strong>{s.speaker}</strong>: {s.text}
                  </li>
                ))}
              </ol>
            )}
            {d.transcription.error && <p className="error">{d.transcription.error}</p>}
          </Section>
        </>
      )}
      {!d && m.loading && <p className="muted">Loading…</p>}
    </>
  );
}

function Title({ meeting: d, onSaved }: { meeting: Meeting; onSaved(): void }) {
  const { api } = useAuth();
  const [title, setTitle] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (title === null) return;
    setBusy(true);
    setProblem(null);
    try {
      await api.post(`/v1/resources/meeting/${d.id}/patch`, { title: title.trim(), base_version: d.version });
      setTitle(null);
      onSaved();
    } catch (err) {
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  };
  if (title === null)
    return (
      <div className="page-head">
        <h1>{d.title}</h1>
        <Badge value={d.transcription.status} />
        <button type="button" onClick={() => setTitle(d.title)}>
          Rename
        </button>
      </div>
    );
  return (
    <form className="page-head settings-form" aria-label="Rename meeting" onSubmit={(e) => void save(e)}>
      <label>
        Title
        <input required maxLength={300} value={title} onChange={(e) => setTitle(e.target.value)} />
      </label>
      <button type="submit" className="primary" disabled={busy || !title.trim()}>
        Save title
      </button>
      <button type="button" disabled={busy} onClick={() => setTitle(null)}>
        Cancel
      </button>
      <Problem problem={problem} />
    </form>
  );
}
