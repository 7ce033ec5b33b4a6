import { useState } from 'react';
import { toProblem, type ApiProblem, type Intervention, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { Problem } from './ui';

/**
 * The answer to an intervention: one button per option and an optional comment, sent through
 * POST /v1/interventions/:id/respond, the same Update every answer route uses. A budget pause is
 * answered by workspace admins only (docs/usage.md): others see who can.
 */
export function Answer({
  intervention,
  onAnswered,
}: {
  intervention: Pick<Intervention, 'id' | 'options' | 'kind' | 'status' | 'title'>;
  onAnswered?: (i: Intervention) => void;
}) {
  const { api, isAdmin } = useAuth();
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  if (intervention.status !== 'pending') return null;
  if (intervention.kind === 'budget' && !isAdmin)
    return <p className="muted">A workspace admin answers a budget pause.</p>;
  const send = async (action: string) => {
    setBusy(action);
    setProblem(null);
    try {
      const i = await api.post<ResponseOf<'post', '/v1/interventions/{id}/respond'>>(
        `/v1/interventions/${intervention.id}/respond`,
        {
          action,
          ...(comment.trim() ? { comment: comment.trim() } : {}),
        },
      );
      onAnswered?.(i);
    } catch (e) {
      setProblem(toProblem(e));
    } finally {
      setBusy(null);
    }
  };
  const commentId = `comment-${intervention.id}`;
  return (
    <form className="answer" onSubmit={(e) => e.preventDefault()} aria-label={`Answer: ${intervention.title}`}>
      <label htmlFor={commentId}>Comment (optional)</label>
      <textarea id={commentId} rows={2} value={comment} onChange={(e) => setComment(e.target.value)} />
      <div className="buttons">
        {intervention.options.map((o) => (
          <button
            key={o}
            type="button"
            className={o === 'reject' ? 'danger' : 'primary'}
            disabled={busy !== null}
            onClick={() => void send(o)}
          >
            {busy === o ? '…' : o}
          </button>
        ))}
      </div>
      <Problem problem={problem} />
    </form>
  );
}
