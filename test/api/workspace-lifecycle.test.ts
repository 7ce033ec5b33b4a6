/**
 * Deleting and exporting a workspace (docs/operations.md): a workspace admin exports it, the
 * platform operator deletes it (a durable workflow with progress), nothing of it remains in any
 * collection, Redis key (JWT rate limits and idempotency records included), Temporal schedule or
 * running workflow, blob folder (bodies no row named included) or the search index; the archive
 * imported into another deployment (another database) holds every row and blob as they were, and
 * its schedule receptors are registered at once. Oversized archives are refused (413).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { IndexFilter } from '../../src/search/backend.js';
import type { SearchType } from '../../src/search/memory-index.js';
import { fromBuffer } from '../../src/blobs/store.js';
import { BSON, type Document } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

const OPERATOR_TOKEN = 'operator-token-0123456789abcdef-0123456789';
const { app, llm } = usePlatform({ OPERATOR_TOKEN });
let other: (TestApp & { close(): Promise<void> }) | undefined;
afterAll(async () => {
  await other?.close();
});

/** Files (not folders) under a folder, recursively; none when it does not exist. */
const filesUnder = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => e.name)
    : [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (d: Document) => JSON.stringify(BSON.EJSON.serialize(d, { relaxed: false }));

const ALL_TYPES: SearchType[] = [
  'assets',
  'artifacts',
  'stakeholder_maps',
  'meetings',
  'action_plans',
  'receptors',
  'pathways',
  'neurons',
  'reflexes',
  'memories',
];
const everything: IndexFilter = { where: { types: ALL_TYPES }, test: () => true, post: false };
/** The workspace's entries in the app's search index (embedded, or Weaviate under CORTEX_SEARCH=weaviate). */
const indexed = async (a: TestApp, ws: string) => (await a.services.search.index().scan(ws, everything)).length;

/** Every row of every collection (but the platform's own), as canonical Extended JSON by collection. */
async function everyRow(a: TestApp): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const c of await a.deps.db.listCollections({}, { nameOnly: true }).toArray()) {
    if (c.name.startsWith('system.')) continue;
    out.set(c.name, (await a.deps.db.collection(c.name).find({}).toArray()).map(text));
  }
  return out;
}

describe('workspace export, delete and import', () => {
  it('exports, deletes everywhere with progress, and imports elsewhere with every row and blob', async () => {
    llm.setDefault(() => ({ chunks: ['ok'], usage: { prompt_tokens: 3, completion_tokens: 2 } }));
    // The API's search index follows the resource feed (api/server.ts starts it at start-up).
    app.services.search.start();
    const ws = await buildWorkspace(app);
    const bystander = await buildWorkspace(app);
    // An idempotent request: its Redis record names the workspace.
    const neuron = await app.post(
      '/v1/neurons',
      ws.key,
      { name: 'leaver', brain_id: ws.brainId, neuron_config: { model: 'openai/gpt-4o-mini' } },
      { 'idempotency-key': `leaver-${randomUUID()}` },
    );
    expect(neuron.status).toBe(201);
    const neuronId = String(neuron.body.id);
    const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'hello' });
    const sub0 = randomUUID();
    const jobId = String(inv.body.job_id);
    expect((await settleJob(app, ws.key, jobId)).status).toBe('completed');
    const asset = await app.post('/v1/assets', ws.key, {
      name: 'numbat',
      content: 'striped marsupial',
      brain_id: ws.brainId,
    });
    expect(asset.status, asset.text).toBe(201);
    const form = new FormData();
    form.append('file', new Blob(['# Tides\n\nHigh at 06:12.'], { type: 'text/markdown' }), 'tides.md');
    const up = await fetch(`${app.url}/v1/assets/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.key}`, ...ws.brainHeaders },
      body: form,
    });
    expect(up.status).toBe(201);
    const sub = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'schedule',
      brain_id: ws.brainId,
      name: 'hourly',
      target: { kind: 'neuron', id: neuronId },
      timing: { cron: '0 * * * *' },
      payload: { message: 'tick' },
    });
    expect(sub.status, sub.text).toBe(201);
    const receptorId = String(sub.body.id);
    await app.deps.temporal.client.schedule.getHandle(`receptor-${receptorId}`).describe();

    // Both ingests done: nothing changes the workspace between this snapshot and the export.
    for (let i = 0; i < 150; i++) {
      const busy = await app.deps.db
        .collection('documents')
        .countDocuments({ workspaceId: ws.workspaceId, 'ingest.status': { $in: ['pending', 'running'] } });
      if (!busy) break;
      await sleep(200);
    }
    // The workspace's rows, and every id among them (children rows carry only their parent's id).
    const owned = new Map<string, string[]>();
    const ids = new Set<string>([ws.workspaceId]);
    for (const [name, rows] of await everyRow(app)) {
      const mine = rows.filter((r) => r.includes(ws.workspaceId));
      if (mine.length) owned.set(name, mine);
    }
    for (const c of ['jobs', 'traces', 'neurons', 'documents', 'receptors', 'api_keys', 'brains'])
      for (const d of await app.deps.db.collection(c).find({ workspaceId: ws.workspaceId }).toArray())
        ids.add(String(d._id));
    ids.add(sub0);
    const blobDir = path.join(app.config.DATA_DIR, 'blobs', 'assets', ws.workspaceId);
    expect(filesUnder(blobDir).length).toBeGreaterThan(0);
    // The search index holds the workspace's resources (the neuron, the assets, the receptor).
    for (let i = 0; i < 100 && (await indexed(app, ws.workspaceId)) < 3; i++) await sleep(200);
    expect(await indexed(app, ws.workspaceId)).toBeGreaterThanOrEqual(3);
    const idemKeys = await app.deps.redis.keys(`${app.config.REDIS_PREFIX}idem:*`);
    expect(idemKeys.filter((k) => k.includes(ws.workspaceId)).length).toBeGreaterThan(0);

    const blobFiles = filesUnder(blobDir);
    // The storage report (counted and summed in the store): every collection's rows as the store holds them.
    const storage = await app.get('/v1/workspace/storage', ws.key);
    expect(storage.status).toBe(200);
    const report = storage.body as { rows: number; blob_bytes: number; collections: Record<string, { rows: number }> };
    for (const c of ['neurons', 'jobs', 'documents', 'receptors', 'traces'])
      expect(report.collections[c]?.rows, c).toBe(
        await app.deps.db.collection(c).countDocuments({ workspaceId: ws.workspaceId }),
      );
    // Children rows (they carry only their parent's id) are counted through their parents.
    for (const [child, parent, field] of [
      ['run_steps', 'jobs', 'jobId'],
      ['document_versions', 'documents', 'documentId'],
    ] as const) {
      const parents = (await app.deps.db.collection(parent).find({ workspaceId: ws.workspaceId }).toArray()).map(
        (p) => p._id,
      );
      expect(report.collections[child]?.rows ?? 0, child).toBe(
        await app.deps.db.collection(child).countDocuments({ [field]: { $in: parents } }),
      );
    }
    expect(report.blob_bytes).toBeGreaterThan(0);
    // Export: admins only.
    const member = await ws.jwt(['member']);
    expect((await app.get('/v1/workspace/export', member)).status).toBe(403);
    const exp = await fetch(`${app.url}/v1/workspace/export`, { headers: { authorization: `Bearer ${ws.key}` } });
    expect(exp.status).toBe(200);
    expect(exp.headers.get('content-type')).toContain('application/gzip');
    const archive = Buffer.from(await exp.arrayBuffer());

    // Bodies no row names (an upload cut short, a live chunk whose row was never written).
    const orphans = [`assets/${ws.workspaceId}/cut-short`, `audio/${ws.workspaceId}/s1/00000001-x.pcm`];
    for (const k of orphans) await app.services.blobs.put(k, fromBuffer(Buffer.from('orphan')), { maxBytes: 100 });
    const folders = ['assets', 'memories', 'attachments', 'audio'].map((f) =>
      path.join(app.config.DATA_DIR, 'blobs', f, ws.workspaceId),
    );
    expect(filesUnder(folders[3]).length).toBe(1);

    // A JWT's request: its rate-limit counter (a 10 s window) names the workspace.
    expect((await app.get('/v1/neurons', await ws.jwt(['workspace_admin'], sub0), ws.brainHeaders)).status).toBe(200);
    const jwtKeys = await app.deps.redis.keys(`${app.config.REDIS_PREFIX}rl:*jwt*`);
    expect(jwtKeys.filter((k) => k.includes(sub0) && k.includes(ws.workspaceId)).length).toBeGreaterThan(0);

    // Delete: the operator only (a tenant's admin key is not an operator credential).
    expect((await app.del(`/v1/operator/workspaces/${ws.workspaceId}`, ws.key)).status).toBe(401);
    expect((await app.del(`/v1/operator/workspaces/${ws.workspaceId}`)).status).toBe(401);
    const del = await app.del(`/v1/operator/workspaces/${ws.workspaceId}`, OPERATOR_TOKEN);
    expect(del.status, del.text).toBe(202);
    expect(del.body).toMatchObject({ status: 'running' });
    const deletionId = String(del.body.id);
    let progress = del.body;
    for (let i = 0; i < 300 && progress.status === 'running'; i++) {
      await sleep(200);
      progress = (await app.get(`/v1/operator/workspace-deletions/${deletionId}`, OPERATOR_TOKEN)).body;
    }
    expect(progress).toMatchObject({ status: 'completed', progress: 100, current_step: 'completed' });
    expect((progress as { deleted: Record<string, number> }).deleted.blobs).toBeGreaterThanOrEqual(orphans.length);

    // Nothing of it remains: any collection, Redis, Temporal, blobs; its credentials are refused.
    const after = await everyRow(app);
    for (const [name, rows] of after) {
      const left = rows.filter((r) => [...ids].some((id) => r.includes(id)));
      expect(left, `${name} still holds rows of the workspace`).toEqual([]);
    }
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await app.deps.redis.scan(cursor, 'MATCH', `${app.config.REDIS_PREFIX}*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    expect(keys.filter((k) => [...ids].some((id) => k.includes(id)))).toEqual([]);
    const running: string[] = [];
    for await (const w of app.deps.temporal.client.workflow.list({
      query: `WorkspaceId = "${ws.workspaceId}" AND ExecutionStatus = "Running"`,
    }))
      running.push(w.workflowId);
    expect(running).toEqual([]);
    await expect(app.deps.temporal.client.schedule.getHandle(`receptor-${receptorId}`).describe()).rejects.toThrow();
    expect(filesUnder(blobDir)).toEqual([]);
    for (const f of folders) expect(existsSync(f), f).toBe(false);
    // Nor the search index: its follower dropped the workspace's entries (on Weaviate, its tenant).
    for (let i = 0; i < 100 && (await indexed(app, ws.workspaceId)) > 0; i++) await sleep(200);
    expect(await indexed(app, ws.workspaceId)).toBe(0);
    // Its keys stop everywhere once each process's short key cache (5 s, as for a revoked key) lapses.
    let refused = 0;
    for (let i = 0; i < 40 && refused !== 401; i++) {
      refused = (await app.get('/v1/neurons', ws.key, ws.brainHeaders)).status;
      if (refused !== 401) await sleep(250);
    }
    expect(refused).toBe(401);
    // A JWT for it (the identity provider still signs them) is refused: the workspace is not provisioned again.
    // (each process trusts a workspace it found live for the same 5 s as a key).
    const jwt = await ws.jwt(['workspace_admin']);
    let late = 0;
    for (let i = 0; i < 40 && late !== 401; i++) {
      late = (await app.get('/v1/session/context', jwt)).status;
      if (late !== 401) await sleep(250);
    }
    expect(late).toBe(401);
    expect(await app.deps.db.collection('workspaces').countDocuments({ _id: ws.workspaceId } as never)).toBe(0);
    // The other workspace is untouched.
    expect((await app.get('/v1/neurons', bystander.key, bystander.brainHeaders)).status).toBe(200);

    // Import into another deployment (another database): every row and blob as exported. Its bounds
    // are set about this archive: the body as sent at most `limit` bytes, a line at most about 4x that.
    const limit = archive.length + 512;
    other = await startTestApp({
      OPERATOR_TOKEN,
      IMPORT_MAX_BYTES: limit,
      ASSET_MAX_BYTES: 3 * limit,
      ATTACHMENT_MAX_BYTES: 3 * limit,
    });
    const send = (body: BodyInit, extra: Record<string, unknown> = {}) =>
      fetch(`${other!.url}/v1/operator/workspaces/import`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/gzip' },
        body,
        ...extra,
      });
    // Declared too large: refused before a byte is read.
    const declared = await send(new Uint8Array(Buffer.concat([archive, Buffer.alloc(1024)])));
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { message: string }).message).toContain('IMPORT_MAX_BYTES');
    // Sent without a length and growing past it (an incompressible line): cut off.
    const big = gzipSync(randomBytes(2 * limit).toString('base64'));
    expect(big.length).toBeGreaterThan(limit);
    const streamed = await send(
      new ReadableStream({
        start(c) {
          for (let i = 0; i < big.length; i += 4096) c.enqueue(new Uint8Array(big.subarray(i, i + 4096)));
          c.close();
        },
      }),
      { duplex: 'half' },
    );
    expect(streamed.status).toBe(413);
    expect(((await streamed.json()) as { message: string }).message).toContain('IMPORT_MAX_BYTES');
    // Small as sent, but one line that expands past what any row or blob needs (a gzip bomb).
    const bomb = gzipSync('a'.repeat(5 * limit + 200_000));
    expect(bomb.length).toBeLessThan(limit);
    const line = await send(new Uint8Array(bomb));
    expect(line.status).toBe(413);
    expect(((await line.json()) as { message: string }).message).toContain('line');
    const imp = await fetch(`${other.url}/v1/operator/workspaces/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/gzip' },
      body: archive,
    });
    const imported = (await imp.json()) as { workspace_id: string; blobs: number };
    expect(imp.status, JSON.stringify(imported)).toBe(201);
    expect(imported).toMatchObject({ workspace_id: ws.workspaceId });
    expect(imported.blobs).toBeGreaterThan(0);
    const there = await everyRow(other);
    for (const [name, rows] of owned) {
      if (/_holds$|_locks$/.test(name)) continue;
      expect((there.get(name) ?? []).filter((r) => r.includes(ws.workspaceId)).sort(), name).toEqual([...rows].sort());
    }
    // Its cron receptor's schedule is registered at once (not at the next API start).
    const sched = other.deps.temporal.client.schedule.getHandle(`receptor-${receptorId}`);
    expect((await sched.describe()).action).toMatchObject({ type: 'startWorkflow', workflowType: 'receptorFire' });
    await sched.delete();
    // The same key works there, and a body reads back.
    expect((await other.get(`/v1/neurons/${neuronId}`, ws.key)).status).toBe(200);
    expect(filesUnder(path.join(other.config.DATA_DIR, 'blobs', 'assets', ws.workspaceId)).sort()).toEqual(
      blobFiles.sort(),
    );
    // Importing it twice is refused.
    const again = await fetch(`${other.url}/v1/operator/workspaces/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/gzip' },
      body: archive,
    });
    expect(again.status).toBe(409);
    // A refused import is not half-done: an archive cut before its trailer, into the first deployment.
    const lines = gunzipSync(archive).toString('utf8').trimEnd().split('\n');
    const cut = gzipSync(Buffer.from(lines.slice(0, -1).join('\n') + '\n'));
    const refuse = (body: Buffer) =>
      fetch(`${app.url}/v1/operator/workspaces/import`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/gzip' },
        body: new Uint8Array(body),
      });
    expect((await refuse(cut)).status).toBe(400);
    expect((await refuse(Buffer.from('not an archive'))).status).toBe(400);
    for (const [name, rows] of await everyRow(app))
      expect(
        rows.filter((r) => r.includes(ws.workspaceId)),
        name,
      ).toEqual([]);
  }, 240_000);
});
