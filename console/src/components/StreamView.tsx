import { entryNode, type Entry, type RunView } from '../run-state';
import { Json } from './ui';

/** An entry as one line of the log: what happened, and to which node. */
function describe(e: Entry): string {
  const node = entryNode(e);
  switch (e.type) {
    case 'status':
      return `status ${String(e.status)}`;
    case 'node_start':
      return `${node} (${String(e.node_type)}) started`;
    case 'node_finish':
      return `${node} (${String(e.node_type)}) finished${e.handle !== undefined ? ` → ${String(e.handle)}` : ''}`;
    case 'node_error':
      return `${node} error (${String(e.policy)}): ${String(e.error)}`;
    case 'node_progress':
      return `${node} ${String(e.done)}/${String(e.total)} items`;
    case 'waiting':
    case 'paused':
      return `${e.type} for an answer (${(e.options as string[] | undefined)?.join(', ') ?? ''})`;
    case 'intervention_answered':
      return `answered: ${String(e.action)}`;
    case 'progress':
      return `turn ${Number(e.turn) + 1} finished`;
    case 'reset':
      return `turn ${Number(e.turn) + 1} retried (attempt ${String(e.attempt)})`;
    default:
      return e.type;
  }
}

/** The time of an entry from its cursor (a Redis stream id: milliseconds, then a sequence). */
const timeOf = (id: string) => {
  const ms = Number(id.split('-')[0]);
  return ms ? new Date(ms).toLocaleTimeString() : '';
};

/*
 * A run's stream as it happens: the reply turn by turn (a turn whose attempt was reset shows as
 * retried, its earlier text gone: docs/streams.md, rule 1), the tool calls and delegations folded,
 * and the terminal entry.
 */
export function StreamView({
  view,
  phase,
  entries,
}: {
  view: RunView;
  phase: string;
  entries: { id: string; data: Entry }[];
}) {
  const turns = [...view.turns.entries()].sort(([a], [b]) => a - b);
  const t = view.terminal;
  const log = entries.filter((e) => e.data.type !== 'token' && e.data.type !== 'complete' && e.data.type !== 'error');
  return (
    <div className="stream" aria-live="polite">
      {turns.length === 0 && !t && log.length === 0 && (
        <p className="muted">{phase === 'ended' ? 'No entries.' : 'Waiting for the first entry…'}</p>
      )}
      {turns.map(([n, turn]) => (
        <div key={n} className="turn" data-turn={n}>
          {turn.retries > 0 && (
            <p className="retried" role="note">
              Turn {n + 1} was retried (attempt {turn.attempt}): the earlier text was dropped.
            </p>
          )}
          <p className="reply">
            {turn.text}
            {!t && phase !== 'ended' && n === turns[turns.length - 1][0] && <span className="caret" aria-hidden />}
          </p>
        </div>
      ))}
      {view.steps.map((s, i) => (
        <details key={i} className="step-entry">
          <summary>
            {s.type === 'tool'
              ? `Tool call: ${String(s.name)}`
              : s.type === 'delegate'
                ? `Delegated to ${String(s.neuron)}`
                : `Classified: ${String(s.category)}`}
          </summary>
          <Json value={s} />
        </details>
      ))}
      {log.length > 0 && (
        <details className="log" open={turns.length === 0}>
          <summary>Entries ({log.length})</summary>
          <ol>
            {log.slice(-200).map((e) => (
              <li key={e.id || e.data.type}>
                <time className="muted">{timeOf(e.id)}</time> {describe(e.data)}
              </li>
            ))}
          </ol>
        </details>
      )}
      {t && (
        <p className={`terminal terminal-${t.type}`} data-terminal={t.type}>
          {t.type === 'complete'
            ? 'Completed'
            : `${t.error === 'cancelled' ? 'Cancelled' : 'Failed'}: ${String(t.message ?? '')}`}
        </p>
      )}
    </div>
  );
}
