import { describe, expect, it } from 'vitest';
import { REDACTED_ARGUMENT, redactArguments, redactResult } from '../../src/runs/tool-approval.js';
import { needsApproval, withEdits } from '../../workflows/runs/tool-approval.js';

describe('tool call arguments shown to a person', () => {
  it('redacts values under credential names and strings shaped like keys, at any depth; keeps the rest', () => {
    const shown = redactArguments({
      to: 'Lisbon',
      api_key: 'abc',
      auth: { password: 'hunter2', user: 'ana', Authorization: 'x' },
      headers: [{ value: 'Bearer abcdefghijkl' }],
      note: 'sk-proj-abcdefghijklmnopqrstuv',
      count: 3,
      accessToken: 42,
    });
    expect(shown).toEqual({
      to: 'Lisbon',
      api_key: REDACTED_ARGUMENT,
      auth: { password: REDACTED_ARGUMENT, user: 'ana', Authorization: REDACTED_ARGUMENT },
      headers: [{ value: REDACTED_ARGUMENT }],
      note: REDACTED_ARGUMENT,
      count: 3,
      accessToken: REDACTED_ARGUMENT,
    });
  });

  it('a tool result on the job stream: JSON redacted as arguments are, plain text only when it is a key as a whole', () => {
    const json = redactResult(JSON.stringify({ city: 'Oslo', echo: 'sk-live-abcdefghijklmnopqrstu', session_id: 7 }));
    expect(JSON.parse(json)).toEqual({ city: 'Oslo', echo: REDACTED_ARGUMENT, session_id: REDACTED_ARGUMENT });
    expect(redactResult('ghp_abcdefghijklmnopqrstuvwxyz0123')).toBe(REDACTED_ARGUMENT);
    expect(redactResult('sunny in Oslo')).toBe('sunny in Oslo');
    expect(redactResult('[1,"Bearer abcdefghijkl"]')).toBe(`[1,"${REDACTED_ARGUMENT}"]`);
    expect(redactResult('{"half": ')).toBe('{"half": ');
  });

  it('an edit keeps the model value wherever the person left it redacted, and only there', () => {
    const model = JSON.stringify({ to: 'Lisbon', api_key: 'k-1', nested: { token: 't-1' }, list: ['a', 'b'] });
    const edited = JSON.parse(
      withEdits(model, {
        to: 'Porto',
        api_key: REDACTED_ARGUMENT,
        nested: { token: REDACTED_ARGUMENT },
        list: ['c'],
        extra: REDACTED_ARGUMENT,
      }),
    ) as Record<string, unknown>;
    expect(edited).toEqual({
      to: 'Porto',
      api_key: 'k-1',
      nested: { token: 't-1' },
      list: ['c'],
      extra: REDACTED_ARGUMENT,
    });
  });

  it('needsApproval: listed names or all', () => {
    expect(needsApproval(undefined, 'x')).toBe(false);
    expect(needsApproval({ tools: ['a'] }, 'a')).toBe(true);
    expect(needsApproval({ tools: ['a'] }, 'b')).toBe(false);
    expect(needsApproval({ tools: 'all' }, 'b')).toBe(true);
  });
});
