/**
 * The reply as a job stream shows it so far (docs/streams.md): each turn's tokens of its latest
 * attempt, in turn order; a `reset` drops the tokens of its turn. The OpenAI-compatible endpoint
 * follows a run with it, and an interrupted run's partial reply is kept from it.
 */
export class ShownReply {
  private turns = new Map<number, { attempt: number; tokens: string[] }>();
  /** Applies one entry; true when the shown text changed. */
  apply(e: Record<string, unknown>): boolean {
    if (e.type !== 'token' && e.type !== 'reset') return false;
    const turn = Number(e.turn);
    const attempt = Number(e.attempt);
    const cur = this.turns.get(turn);
    if (cur && attempt < cur.attempt) return false;
    // A reset begins its attempt afresh; a token of a newer attempt than the one shown does too.
    if (!cur || attempt > cur.attempt || e.type === 'reset') this.turns.set(turn, { attempt, tokens: [] });
    if (e.type === 'token') this.turns.get(turn)!.tokens.push(String(e.text ?? ''));
    return true;
  }
  text(): string {
    return [...this.turns.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, t]) => t.tokens.join(''))
      .join('');
  }
}
