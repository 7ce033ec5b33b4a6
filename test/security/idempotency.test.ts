import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

/**
 * Threat class: a caller reaches another caller's outcome through a cache keyed by request values
 * (docs/security.md). The actor is a member of the workspace (a JWT without roles, or a member's
 * API key); what they must never reach is an admin's answer: a new admin key, a message body.
 */
const { app, llm } = usePlatform();

describe('Idempotency-Key outcomes belong to the caller that sent them', () => {
  it("a member who replays an admin's key on POST /v1/api-keys runs their own request and never gets the admin's key", async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const member = await ws.jwt([]);
    const key = `create-ci-key-${randomUUID()}`;
    const body = { name: 'ci', roles: ['workspace_admin'] };

    const first = await app.post('/v1/api-keys', admin, body, { 'idempotency-key': key });
    expect(first.status, first.text).toBe(201);
    const adminKey = String(first.body.key);
    expect(adminKey).toMatch(/^ctx_/);

    // The same key and the same body, from a member: their own request, refused on its own merits.
    const stolen = await app.post('/v1/api-keys', member, body, { 'idempotency-key': key });
    expect(stolen.status, stolen.text).toBe(403);
    expect(stolen.headers.get('idempotent-replayed')).toBeNull();
    expect(stolen.text).not.toContain(adminKey);
    expect(stolen.text).not.toContain(String(first.body.id));

    // Another member, with a body they may send (a member key): a fresh key of their own, not the admin's.
    const again = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'ci' }, { 'idempotency-key': key });
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.key).not.toBe(adminKey);
    expect(again.body.roles).toEqual(['member']);

    // The admin's own replay still answers the stored outcome.
    const replay = await app.post('/v1/api-keys', admin, body, { 'idempotency-key': key });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.key).toBe(adminKey);
  });

  it("a member's API key that sends an admin key's Idempotency-Key writes its own message, with an id of its own", async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const memberKey = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member' });
    expect(memberKey.status, memberKey.text).toBe(201);
    const member = String(memberKey.body.key);
    const traceId = randomUUID();
    const key = `msg-${randomUUID()}`;

    const a = await app.post(
      `/v1/traces/${traceId}/messages`,
      ws.key,
      { content: 'the private plan' },
      { 'idempotency-key': key },
    );
    expect(a.status, a.text).toBe(201);
    const m = await app.post(
      `/v1/traces/${traceId}/messages`,
      member,
      { content: 'the private plan' },
      { 'idempotency-key': key },
    );
    expect(m.status, m.text).toBe(201);
    expect(m.headers.get('idempotent-replayed')).toBeNull();
    // Its engram id is derived from its own key scope, never the admin's (so it neither reads nor overwrites it).
    expect(JSON.stringify(m.body)).not.toBe(JSON.stringify(a.body));
    const listed = await app.get(`/v1/traces/${traceId}/messages`, admin);
    expect(listed.status, listed.text).toBe(200);
    expect(JSON.stringify(listed.body).split('the private plan').length - 1).toBe(2);

    // Each caller's replay is its own stored outcome.
    const mAgain = await app.post(
      `/v1/traces/${traceId}/messages`,
      member,
      { content: 'the private plan' },
      { 'idempotency-key': key },
    );
    expect(mAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(mAgain.body).toEqual(m.body);
  });

  it("another caller's same client_nonce on the same trace is a run of its own; the same caller's repeat is the same run", async () => {
    const ws = await buildWorkspace(app);
    llm.setDefault(() => ({ text: 'answered' }));
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'nonce',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status, n.text).toBe(201);
    const traceId = randomUUID();
    const invoke = (auth: string, message: string) =>
      app.post(`/v1/neurons/${String(n.body.id)}/invoke`, auth, { message, trace_id: traceId, client_nonce: 'n-1' });
    const first = await invoke(ws.key, 'the admin asks');
    expect(first.status, first.text).toBe(202);
    const other = await invoke(await ws.jwt([]), 'the member asks');
    expect(other.status, other.text).toBe(202);
    expect(other.body.job_id).not.toBe(first.body.job_id);
    expect(other.body.user_engram_id).not.toBeNull();
    const again = await invoke(ws.key, 'the admin asks');
    expect(again.body.job_id).toBe(first.body.job_id);
    await settleJob(app, ws.key, String(first.body.job_id));
    await settleJob(app, ws.key, String(other.body.job_id));
  });

  it('an MCP session answers only the credential that opened it', async () => {
    const ws = await buildWorkspace(app);
    const memberKey = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member' });
    const member = String(memberKey.body.key);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(`${app.url}/v1/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${ws.key}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const sessionId = init.headers.get('mcp-session-id');
    expect(sessionId).toBeTruthy();
    const list = await fetch(`${app.url}/v1/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${member}`, 'mcp-session-id': sessionId! },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
    });
    expect(list.status).toBe(404);
    expect(await list.text()).toContain('Session not found');
    await fetch(`${app.url}/v1/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ws.key}`, 'mcp-session-id': sessionId! },
    });
  });
});
