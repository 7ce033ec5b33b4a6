import type { RunView } from '../run-state';
import { Json } from './ui';

/*
 * A run's stream as it happens: the reply turn by turn (a turn whose attempt was reset shows as
 * retried, its earlier text gone: docs/streams.md, rule 1), the tool calls and delegations folded,
 * and the terminal entry.
 */
export function StreamView({ view, phase }: { view: RunView; phase: string }) {
  const turns = [...view.turns.entries()].sort(([a], [b]) => a - b);
  const t = view.terminal;
  return (
    <div className="stream" aria-live="polite">
      {turns.length === 0 && !t && (
        <p className="muted">{phase === 'ended' ? 'No reply.' : 'Waiting for the reply…'}</p>
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
