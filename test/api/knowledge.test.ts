import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Document, Packer, Paragraph, TextRun } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Artifact,
  ArtifactWithJob,
  Asset,
  AssetList,
  AssetWithJob,
  Chunk,
  ChunkList,
  MemoryWithJob,
  Recollection,
  RecollectionStats,
  Structure,
  VersionList,
} from '../../src/knowledge/index.js';
import type { IngestInput } from '../../src/temporal/definitions.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';
import { dataOf, readSse } from '../support/sse.js';

// A loopback web server the URL ingest may reach (allow-listed as a self-hosted host).
let site: Server;
let siteHost = '';
const pages: Record<string, { type: string; body: string | Buffer }> = {
  '/guide.html': {
    type: 'text/html',
    body: '<!doctype html><html><head><title>Guide</title></head><body><h1>Vault guide</h1><p>The quokka lives on Rottnest island.</p><script>var x=1</script></body></html>',
  },
};
beforeAll(async () => {
  site = createServer((req, res) => {
    const p = pages[req.url ?? ''];
    if (!p) {
      res.writeHead(404).end('no');
      return;
    }
    res.writeHead(200, { 'content-type': p.type }).end(p.body);
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  siteHost = `127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => site.close(() => r())));

// 127.0.0.1 is allow-listed as a self-hosted host; `localhost` (the same address by name) is not.
const { app } = usePlatform({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'] });
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function upload(
  ws: Ws,
  path: string,
  file: { name: string; type: string; data: Buffer },
  fields: Record<string, string> = {},
) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([new Uint8Array(file.data)], { type: file.type }), file.name);
  const res = await fetch(app.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.key}`, ...ws.brainHeaders },
    body: form,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
async function ingested(ws: Ws, jobId: string | null) {
  expect(jobId).toBeTruthy();
  const job = await settleJob(app, ws.key, jobId!);
  expect(job.status, JSON.stringify(job)).toBe('completed');
  return job;
}
/** The activities a job's workflow scheduled, in order (from its Temporal history). */
async function activitiesOf(jobId: string): Promise<string[]> {
  const history = await app.deps.temporal.client.workflow.getHandle(jobId).fetchHistory();
  return (history.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}
const chunksOf = async (ws: Ws, lane: string, id: string) =>
  ChunkList.parse((await app.get(`/v1/${lane}/${id}/chunks?limit=500`, ws.key, ws.brainHeaders)).body);

async function makePdf(lines: string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const page = pdf.addPage([600, 800]);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  lines.forEach((l, k) => page.drawText(l, { x: 40, y: 760 - k * 20, size: 12, font }));
  return Buffer.from(await pdf.save());
}
async function makeDocx(paragraphs: string[]): Promise<Buffer> {
  const doc = new Document({
    sections: [{ children: paragraphs.map((p) => new Paragraph({ children: [new TextRun(p)] })) }],
  });
  return Packer.toBuffer(doc);
}

describe('assets', () => {
  it('ingests text: a job that completes with chunks and vectors of the configured model; body immutable; metadata versions; chunk reads and removal', async () => {
    const ws = await buildWorkspace(app);
    const text = Array.from(
      { length: 60 },
      (_, k) => `Paragraph ${k}: the platypus ${k % 2 ? 'swims' : 'digs'} in river number ${k}, far from the ocean.`,
    ).join('\n\n');
    const res = await app.post(
      '/v1/assets/ingest',
      ws.key,
      { source: { type: 'text', value: text }, name: 'Platypus notes', path: '/animals/monotremes/' },
      ws.brainHeaders,
    );
    expect(res.status).toBe(201);
    const { asset, job_id } = AssetWithJob.parse(res.body);
    expect(asset).toMatchObject({
      name: 'Platypus notes',
      path: 'animals/monotremes',
      content_type: 'text/plain',
      size: Buffer.byteLength(text),
      kind: 'asset',
    });
    const job = await ingested(ws, job_id);
    expect(job).toMatchObject({ progress: 100, current_step: 'completed' });
    const after = Asset.parse((await app.get(`/v1/assets/${asset.id}`, ws.key)).body);
    const chunks = await chunksOf(ws, 'assets', asset.id);
    expect(chunks.total).toBeGreaterThan(1);
    expect(after.ingest).toMatchObject({
      status: 'ready',
      chunk_count: chunks.total,
      embedded_count: chunks.total,
      embedding_model: 'local/wink-sg-100d',
    });
    expect(
      chunks.chunks.every(
        (c) => c.embedding_model === 'local/wink-sg-100d' && c.embedding_dimension === 100 && c.source === 'body',
      ),
    ).toBe(true);
    expect(chunks.chunks.map((c) => c.text).join(' ')).toContain('Paragraph 59');
    const one = Chunk.parse(
      (await app.get(`/v1/assets/chunks/${encodeURIComponent(chunks.chunks[0].id)}`, ws.key)).body,
    );
    expect(one.text).toBe(chunks.chunks[0].text);

    // The body is immutable; the other fields are metadata versions.
    for (const body of [{ content: 'new' }, { source: { type: 'text', value: 'x' } }, { name: 'x', body: 'y' }]) {
      const r = await app.put(`/v1/assets/${asset.id}`, ws.key, body);
      expect(r.status).toBe(400);
      expect(String((r.body as { message: string }).message)).toMatch(/cannot be replaced/);
    }
    expect((await app.put(`/v1/assets/${asset.id}`, ws.key, {})).status).toBe(400);
    const renamed = AssetWithJob.parse(
      (await app.put(`/v1/assets/${asset.id}`, ws.key, { name: 'Platypus', metadata: { tag: 'zoo' } })).body,
    ).asset;
    expect(renamed).toMatchObject({
      name: 'Platypus',
      metadata: { tag: 'zoo' },
      version: 2,
      sha256: asset.sha256,
      size: asset.size,
    });
    const versions = VersionList.parse((await app.get(`/v1/assets/${asset.id}/versions`, ws.key)).body);
    expect(versions.versions.map((v) => [v.version, v.changes])).toEqual([
      [2, ['name', 'metadata']],
      [1, ['created']],
    ]);

    // skip_embedding on: vectors go; off again: a job puts them back.
    await app.put(`/v1/assets/${asset.id}`, ws.key, { skip_embedding: true });
    expect((await chunksOf(ws, 'assets', asset.id)).chunks.every((c) => c.embedding_model === null)).toBe(true);
    const back = AssetWithJob.parse((await app.put(`/v1/assets/${asset.id}`, ws.key, { skip_embedding: false })).body);
    await ingested(ws, back.job_id);
    expect(
      (await chunksOf(ws, 'assets', asset.id)).chunks.every((c) => c.embedding_model === 'local/wink-sg-100d'),
    ).toBe(true);

    expect((await app.request('DELETE', `/v1/assets/${asset.id}/chunks/by-source`, { auth: ws.key })).status).toBe(400);
    expect(
      (await app.request('DELETE', `/v1/assets/${asset.id}/chunks/by-source?source=other`, { auth: ws.key })).body,
    ).toEqual({ deleted_count: 0 });
    expect(
      (await app.request('DELETE', `/v1/assets/${asset.id}/chunks/by-source?source=body`, { auth: ws.key })).body,
    ).toEqual({ deleted_count: chunks.total });
    expect((await chunksOf(ws, 'assets', asset.id)).total).toBe(0);
    expect(Asset.parse((await app.get(`/v1/assets/${asset.id}`, ws.key)).body).ingest.chunk_count).toBe(0);
  });

  it('ingests a URL on an allow-listed loopback server (HTML to text) and refuses private addresses otherwise', async () => {
    const ws = await buildWorkspace(app);
    const res = await app.post(
      '/v1/assets/ingest',
      ws.key,
      { source: { type: 'url', value: `http://${siteHost}/guide.html` }, path: 'web' },
      ws.brainHeaders,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { asset, job_id } = AssetWithJob.parse(res.body);
    expect(asset).toMatchObject({
      name: 'guide.html',
      content_type: 'text/html',
      source: { type: 'url', value: `http://${siteHost}/guide.html` },
    });
    await ingested(ws, job_id);
    const text = (await chunksOf(ws, 'assets', asset.id)).chunks.map((c) => c.text).join(' ');
    expect(text).toContain('The quokka lives on Rottnest island.');
    expect(text).not.toContain('var x');
    expect(
      (
        await app.post(
          '/v1/assets/ingest',
          ws.key,
          { source: { type: 'url', value: `http://${siteHost}/missing` } },
          ws.brainHeaders,
        )
      ).status,
    ).toBe(400);
    // The same server by another name is a loopback address the guard refuses.
    const blocked = await app.post(
      '/v1/assets/ingest',
      ws.key,
      { source: { type: 'url', value: `http://localhost:${siteHost.split(':')[1]}/guide.html` } },
      ws.brainHeaders,
    );
    expect(blocked.status).toBe(400);
    expect(String((blocked.body as { message: string }).message)).toMatch(/loopback/i);
    expect(
      (
        await app.post(
          '/v1/assets/ingest',
          ws.key,
          { source: { type: 'url', value: 'ftp://example.com/x' } },
          ws.brainHeaders,
        )
      ).status,
    ).toBe(400);
    expect(
      (await app.post('/v1/assets/ingest', ws.key, { source: { type: 'file', value: 'x' } }, ws.brainHeaders)).status,
    ).toBe(400);
    expect((await app.post('/v1/assets/ingest', ws.key, { source: { type: 'text', value: 'x' } })).status).toBe(400);
  });

  it('uploads a PDF and a DOCX made here as multipart: type sniffed from the bytes, text extracted, chunks stored', async () => {
    const ws = await buildWorkspace(app);
    const pdf = await makePdf(['Quarterly report of the wombat cooperative.', 'Revenue rose eleven percent.']);
    const up = await upload(
      ws,
      '/v1/assets/ingest',
      { name: 'report.bin', type: 'application/octet-stream', data: pdf },
      { path: 'reports', metadata: '{"year":2026}' },
    );
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const a = AssetWithJob.parse(up.body);
    expect(a.asset).toMatchObject({
      content_type: 'application/pdf',
      name: 'report.bin',
      path: 'reports',
      metadata: { year: 2026 },
      source: { type: 'upload', value: 'report.bin' },
    });
    await ingested(ws, a.job_id);
    expect((await chunksOf(ws, 'assets', a.asset.id)).chunks.map((c) => c.text).join(' ')).toMatch(
      /wombat cooperative[\s\S]*eleven percent/,
    );

    const docx = await makeDocx(['Minutes of the echidna committee.', 'Decision: build a second burrow.']);
    const up2 = await upload(ws, '/v1/assets/ingest', { name: 'minutes.txt', type: 'text/plain', data: docx });
    expect(up2.status, JSON.stringify(up2.body)).toBe(201);
    const d = AssetWithJob.parse(up2.body);
    await ingested(ws, d.job_id);
    expect(Asset.parse((await app.get(`/v1/assets/${d.asset.id}`, ws.key)).body).content_type).toBe(
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    );
    expect((await chunksOf(ws, 'assets', d.asset.id)).chunks.map((c) => c.text).join(' ')).toMatch(
      /echidna committee[\s\S]*second burrow/,
    );

    // A binary that is no document is stored, not chunked.
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const up3 = await upload(ws, '/v1/assets/ingest', { name: 'dot.md', type: 'text/markdown', data: png });
    const p = AssetWithJob.parse(up3.body);
    expect(p.asset.content_type).toBe('image/png');
    await ingested(ws, p.job_id);
    expect(Asset.parse((await app.get(`/v1/assets/${p.asset.id}`, ws.key)).body).ingest).toMatchObject({
      status: 'stored',
      chunk_count: 0,
    });
    expect(
      (
        await upload(
          ws,
          '/v1/assets/ingest',
          { name: 'x.txt', type: 'text/plain', data: Buffer.from('hi') },
          { metadata: '[1]' },
        )
      ).status,
    ).toBe(400);

    const structure = Structure.parse((await app.get('/v1/assets/structure', ws.key, ws.brainHeaders)).body);
    expect(structure.folders).toEqual([{ path: 'reports', name: 'reports', item_count: 1 }]);
    expect(structure.items.map((i) => i.name).sort()).toEqual(['dot.md', 'minutes.txt']);
    const batch = (
      await app.post('/v1/assets/structure-batch', ws.key, { paths: ['reports', 'nothing/here'] }, ws.brainHeaders)
    ).body as { structures: { path: string; total: number }[] };
    expect(batch.structures.map((s) => [s.path, s.total])).toEqual([
      ['reports', 1],
      ['nothing/here', 0],
    ]);
    expect(AssetList.parse((await app.get('/v1/assets?path_prefix=reports', ws.key, ws.brainHeaders)).body).total).toBe(
      1,
    );
  });

  it('a retried ingest step writes no chunk twice and no vector twice', async () => {
    const ws = await buildWorkspace(app);
    const text = Array.from({ length: 40 }, (_, k) => `Line ${k} about the numbat and its termite diet.`).join('\n\n');
    const { asset, job_id } = AssetWithJob.parse(
      (await app.post('/v1/assets', ws.key, { name: 'numbat', content: text, brain_id: ws.brainId })).body,
    );
    await ingested(ws, job_id);
    const before = await chunksOf(ws, 'assets', asset.id);
    // The same activity inputs again, as Temporal would run them on a retry after the writes landed.
    const input: IngestInput = {
      jobId: job_id!,
      workspaceId: ws.workspaceId,
      brainId: ws.brainId,
      kind: 'asset',
      resourceId: asset.id,
      version: 1,
      userId: null,
      apiKeyId: null,
    };
    await app.services.ingest.prepare(input);
    await app.services.ingest.prepare(input);
    expect(await app.services.ingest.embed(input, 0, before.total, before.total, 2)).toBe(0);
    const after = await chunksOf(ws, 'assets', asset.id);
    expect(after.total).toBe(before.total);
    expect(after.chunks.map((c) => [c.id, c.text, c.embedding_model])).toEqual(
      before.chunks.map((c) => [c.id, c.text, c.embedding_model]),
    );
    expect(await app.deps.db.collection('chunks').countDocuments({ resourceId: asset.id })).toBe(before.total);
    // A chunking into fewer parts than the version holds (a stray tail, as a change of chunk size
    // leaves) removes the tail; one that finds no tail removes nothing.
    const stray = { ...(await app.deps.db.collection('chunks').findOne({ resourceId: asset.id, index: 0 }))! };
    await app.deps.db
      .collection('chunks')
      .insertOne({ ...stray, _id: `${asset.id}:1:${before.total + 5}`, index: before.total + 5 } as never);
    await app.services.ingest.prepare(input);
    expect(await app.deps.db.collection('chunks').countDocuments({ resourceId: asset.id })).toBe(before.total);
  });
});

describe('artifacts', () => {
  it('content versions, raw body of a version, patch envelope with a stale base (409), central patch, lanes refuse each other', async () => {
    const ws = await buildWorkspace(app);
    const created = ArtifactWithJob.parse(
      (
        await app.post(
          '/v1/artifacts',
          ws.key,
          { title: 'Plan', content: '# Plan\n\nStep one.', content_type: 'text/markdown' },
          ws.brainHeaders,
        )
      ).body,
    );
    const id = created.artifact.id;
    expect(created.artifact).toMatchObject({ version: 1, title: 'Plan', content_type: 'text/markdown' });
    const first = await ingested(ws, created.job_id);
    // A version of one chunk is extracted, embedded and made live by one activity (not three).
    expect(await activitiesOf(created.job_id!)).toEqual(['ingestWhole']);
    expect(first).toMatchObject({ progress: 100, result: { chunk_count: 1, embedded_count: 1 } });
    const v2 = ArtifactWithJob.parse(
      (await app.put(`/v1/artifacts/${id}`, ws.key, { content: '# Plan\n\nStep one.\nStep two.' })).body,
    );
    expect(v2.artifact.version).toBe(2);
    await ingested(ws, v2.job_id);
    const raw1 = await app.get(`/v1/artifacts/${id}/body?version=1&format=markdown`, ws.key);
    expect(raw1.status).toBe(200);
    expect(raw1.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect(raw1.text).toBe('# Plan\n\nStep one.');
    expect((await app.get(`/v1/artifacts/${id}/body`, ws.key)).text).toBe('# Plan\n\nStep one.\nStep two.');
    expect((await app.get(`/v1/artifacts/${id}/body?version=9`, ws.key)).status).toBe(404);
    expect((await app.get(`/v1/artifacts/${id}/body?version=zero`, ws.key)).status).toBe(400);
    // Only the newest version's chunks remain once its ingest finished.
    const ch = await chunksOf(ws, 'artifacts', id);
    expect(ch.chunks.every((c) => c.version === 2)).toBe(true);
    expect(ch.chunks.map((c) => c.text).join('')).toContain('Step two.');

    const patched = await app.post('/v1/artifacts/patch', ws.key, {
      artifact_id: id,
      base_version: 2,
      edits: [
        { op: 'search_replace', search: 'Step two.', replace: 'Step 2.' },
        { op: 'append', text: '\nStep three.' },
      ],
    });
    expect(patched.status).toBe(200);
    expect(ArtifactWithJob.parse(patched.body).artifact).toMatchObject({
      version: 3,
      content: '# Plan\n\nStep one.\nStep 2.\nStep three.',
    });
    const stale = await app.post('/v1/artifacts/patch', ws.key, {
      artifact_id: id,
      base_version: 2,
      edits: [{ op: 'append', text: 'lost' }],
    });
    expect(stale.status).toBe(409);
    expect(
      (
        await app.post('/v1/artifacts/patch', ws.key, {
          artifact_id: id,
          base_version: 3,
          edits: [{ op: 'search_replace', search: 'absent', replace: 'x' }],
        })
      ).status,
    ).toBe(409);
    expect(
      (await app.post('/v1/artifacts/patch', ws.key, { artifact_id: id, base_version: 3, edits: [{ op: 'delete' }] }))
        .status,
    ).toBe(400);
    expect((await app.post('/v1/artifacts/patch', ws.key, { artifact_id: id, base_version: 3 })).status).toBe(400);
    const central = await app.post(`/v1/resources/artifact/${id}/patch`, ws.key, {
      base_version: 3,
      edits: [{ op: 'prepend', text: '<!-- reviewed -->\n' }],
    });
    expect(central.status).toBe(200);
    expect((central.body as { artifact: { version: number } }).artifact.version).toBe(4);
    // The central patch of kind meeting reads a meeting: an artifact's id names none.
    expect((await app.post(`/v1/resources/meeting/${id}/patch`, ws.key, { base_version: 4, title: 'x' })).status).toBe(
      404,
    );
    expect((await app.post(`/v1/resources/widget/${id}/patch`, ws.key, { base_version: 4, title: 'x' })).status).toBe(
      400,
    );
    const versions = VersionList.parse((await app.get(`/v1/artifacts/${id}/versions`, ws.key)).body);
    expect(versions.versions.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    expect(Artifact.parse((await app.get(`/v1/artifacts/${id}`, ws.key)).body).latest_version).toBe(4);

    // Lanes: each route family refuses the other's rows with a 400 that names the right route.
    const { asset } = AssetWithJob.parse(
      (await app.post('/v1/assets', ws.key, { name: 'meta only' }, ws.brainHeaders)).body,
    );
    for (const [path, lane] of [
      [`/v1/artifacts/${asset.id}`, 'an asset'],
      [`/v1/assets/${id}`, 'an artifact'],
      [`/v1/artifacts/${asset.id}/versions`, 'an asset'],
    ]) {
      const r = await app.get(path, ws.key);
      expect(r.status).toBe(400);
      expect((r.body as { message: string }).message).toContain(lane);
    }
    expect((await app.put(`/v1/assets/${id}`, ws.key, { name: 'x' })).status).toBe(400);
    expect((await app.del(`/v1/artifacts/${asset.id}`, ws.key)).status).toBe(400);
    // The chunks of the newest version (version 4's ingest replaces older versions' chunks when it finishes).
    await ingested(ws, (central.body as { job_id: string | null }).job_id);
    const live = await chunksOf(ws, 'artifacts', id);
    expect(live.chunks.every((c) => c.version === 4)).toBe(true);
    expect((await app.get(`/v1/assets/chunks/${encodeURIComponent(live.chunks[0].id)}`, ws.key)).status).toBe(400);
    expect((await app.get(`/v1/resources/artifacts/${id}`, ws.key)).body).toMatchObject({
      artifact: { id, version: 4 },
    });
    expect((await app.get(`/v1/resources/assets/${asset.id}`, ws.key)).body).toMatchObject({ asset: { id: asset.id } });
    expect((await app.get(`/v1/resources/unknown/${asset.id}`, ws.key)).status).toBe(404);
  });

  it('the event stream shows create, update, move and delete of an artifact, resumable by cursor; tree and move', async () => {
    const ws = await buildWorkspace(app);
    const { artifact } = ArtifactWithJob.parse(
      (
        await app.post(
          '/v1/artifacts',
          ws.key,
          { title: 'Roadmap', content: 'Q1: ship.', path: 'plans' },
          ws.brainHeaders,
        )
      ).body,
    );
    await app.put(`/v1/artifacts/${artifact.id}`, ws.key, { content: 'Q1: ship. Q2: grow.' });
    const mv = await app.post(
      '/v1/resources/move',
      ws.key,
      { moves: [{ resource_id: artifact.id, path: 'plans/2027' }] },
      ws.brainHeaders,
    );
    expect(mv.body).toEqual({
      moved: [{ id: artifact.id, kind: 'artifact', from_path: 'plans', to_path: 'plans/2027' }],
      not_found: [],
    });
    expect(
      (await app.post('/v1/resources/move', ws.key, { moves: [{ resource_id: artifact.id, path: 'x' }] })).status,
    ).toBe(400);
    expect(
      (
        await app.post('/v1/resources/move', ws.key, {
          move_profile: 'broad',
          moves: [{ resource_id: artifact.id, path: '../x' }],
        })
      ).status,
    ).toBe(400);
    const member = await ws.jwt(['member']);
    expect(
      (
        await app.post('/v1/resources/move', member, {
          move_profile: 'broad',
          moves: [{ resource_id: artifact.id, path: 'y' }],
        })
      ).status,
    ).toBe(403);
    const tree = (await app.get('/v1/resources/tree?path_prefix=plans', ws.key, ws.brainHeaders)).body as {
      folders: { path: string }[];
      rows: { id: string; path: string }[];
    };
    expect(tree.folders.map((f) => f.path)).toEqual(['plans/2027']);
    expect(tree.rows).toMatchObject([{ id: artifact.id, path: 'plans/2027' }]);
    await app.del(`/v1/artifacts/${artifact.id}`, ws.key);

    const url = `${app.url}/v1/resource-events/stream`;
    const mine = (e: Record<string, unknown>) => (e.resource as { id?: string } | undefined)?.id === artifact.id;
    const all = (
      await readSse(url, {
        headers: { authorization: `Bearer ${ws.key}` },
        until: (ev) =>
          ev.some((e) => {
            const d = dataOf(e);
            return mine(d) && d.action === 'deleted';
          }),
        timeoutMs: 10_000,
      })
    ).events;
    const actions = all
      .filter((e) => mine(dataOf(e)) && !(dataOf(e).resource as { change?: string }).change)
      .map((e) => dataOf(e).action);
    expect(actions).toEqual(['created', 'updated', 'moved', 'deleted']);
    const moved = all.find((e) => dataOf(e).action === 'moved')!;
    expect(dataOf(moved).resource).toMatchObject({ kind: 'artifact', from_path: 'plans', to_path: 'plans/2027' });
    // Resume after the move: only what followed it.
    const rest = (
      await readSse(`${url}?after=${encodeURIComponent(moved.id!)}`, {
        headers: { authorization: `Bearer ${ws.key}` },
        until: (ev) => ev.some((e) => dataOf(e).action === 'deleted'),
        timeoutMs: 10_000,
      })
    ).events;
    expect(
      rest
        .filter((e) => mine(dataOf(e)))
        .map((e) => dataOf(e).action)
        .filter((a) => a !== 'updated'),
    ).toEqual(['deleted']);
    expect(rest.every((e) => e.id! > moved.id!)).toBe(true);
  });
});

describe('vault stimuli', () => {
  it('a receptor subscribed to vault.artifact.created fires once per created artifact, with the resource in its trigger', async () => {
    const ws = await buildWorkspace(app);
    const neuron = (await app.post('/v1/neurons', ws.key, { name: 'librarian', brain_id: ws.brainId })).body as {
      id: string;
    };
    const sub = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'stimulus',
      name: 'on artifact',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: neuron.id },
      stimulus_keys: ['vault.artifact.created'],
    });
    expect(sub.status, sub.text).toBe(201);
    const receptorId = (sub.body as { id: string }).id;
    const { artifact } = ArtifactWithJob.parse(
      (
        await app.post(
          '/v1/artifacts',
          ws.key,
          { title: 'Field notes', content: 'Echidnas lay eggs.' },
          ws.brainHeaders,
        )
      ).body,
    );
    await app.put(`/v1/artifacts/${artifact.id}`, ws.key, { content: 'Echidnas lay eggs. So do platypuses.' });
    let jobs: { job_id: string; status: string }[] = [];
    for (let i = 0; i < 100 && jobs.length === 0; i++) {
      jobs = (
        (await app.get(`/v1/jobs?receptor_id=${receptorId}`, ws.key)).body as {
          jobs: { job_id: string; status: string }[];
        }
      ).jobs;
      if (!jobs.length) await new Promise((r) => setTimeout(r, 100));
    }
    expect(jobs).toHaveLength(1);
    expect((await settleJob(app, ws.key, jobs[0].job_id)).status).toBe('completed');
    const firings = (await app.deps.db.collection('receptor_firings').find({ receptorId }).toArray()) as unknown as {
      trigger: string;
      stimulusKey: string;
    }[];
    expect(firings).toHaveLength(1);
    expect(firings[0].stimulusKey).toBe('vault.artifact.created');
    expect(JSON.parse(firings[0].trigger)).toMatchObject({
      payload: {
        stimulus: 'vault.artifact.created',
        resource_type: 'artifact',
        resource_id: artifact.id,
        name: 'Field notes',
      },
    });
  });
});

describe('memories and recollections', () => {
  it('ingest validation, generated titles recorded as such, chunks, bulk delete counts, recollection stats that match the rows', async () => {
    const ws = await buildWorkspace(app);
    const h = ws.brainHeaders;
    for (const [body, re] of [
      [{}, /content or file_url/],
      [{ content: 'a', file_url: 'https://example.com/a' }, /content or file_url/],
      [{ file_url: 'ftp://example.com/a' }, /http/],
      [{ content: 'a', owner_type: 'neuron', owner_id: 'not-a-uuid' }, /owner_id/],
      [{ content: 'a', owner_type: 'robot', owner_id: crypto.randomUUID() }, /owner_type/],
    ] as [Record<string, unknown>, RegExp][]) {
      const r = await app.post('/v1/memories/ingest', ws.key, body, h);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((r.body as { message: string }).message).toMatch(re);
    }
    expect(
      (
        await app.post(
          '/v1/memories/ingest',
          ws.key,
          { content: 'a', owner_type: 'neuron', owner_id: crypto.randomUUID() },
          h,
        )
      ).status,
    ).toBe(404);
    const n = (await app.post('/v1/neurons', ws.key, { name: 'keeper', brain_id: ws.brainId })).body as { id: string };

    const gen = MemoryWithJob.parse(
      (
        await app.post(
          '/v1/memories/ingest',
          ws.key,
          {
            content: 'Kangaroos cannot walk backwards.\n\nThey hop at up to 70 km/h.',
            owner_type: 'neuron',
            owner_id: n.id,
          },
          h,
        )
      ).body,
    );
    expect(gen.memory).toMatchObject({
      title_source: 'pending',
      owner_type: 'neuron',
      owner_id: n.id,
      source_type: 'text',
    });
    await ingested(ws, gen.job_id);
    const described = (await app.get(`/v1/memories/${gen.memory.id}`, ws.key)).body as {
      name: string;
      description: string;
      title_source: string;
      title_model: string | null;
    };
    expect(['model', 'derived']).toContain(described.title_source);
    expect(described.name.length).toBeGreaterThan(0);
    expect(described.description.length).toBeGreaterThan(0);
    if (described.title_source === 'model') expect(described.title_model).toBe(app.config.DEFAULT_MODEL);

    const kept = MemoryWithJob.parse(
      (
        await app.post(
          '/v1/memories/ingest',
          ws.key,
          {
            content: 'Koalas sleep twenty hours a day.',
            name: 'Koalas',
            skip_title_description: true,
            skip_embedding: true,
          },
          h,
        )
      ).body,
    );
    await ingested(ws, kept.job_id);
    const k = (await app.get(`/v1/memories/${kept.memory.id}`, ws.key)).body as {
      name: string;
      description: string | null;
      title_source: string;
      ingest: { embedded_count: number; chunk_count: number };
    };
    expect(k).toMatchObject({
      name: 'Koalas',
      description: null,
      title_source: 'caller',
      ingest: { embedded_count: 0, chunk_count: 1 },
    });
    expect((await app.get(`/v1/memories/${kept.memory.id}/chunks`, ws.key)).body).toMatchObject({
      total: 1,
      chunks: [{ text: 'Koalas sleep twenty hours a day.', embedding_model: null }],
    });
    const plain = await app.post('/v1/memories', ws.key, { name: 'Empty', source_type: 'text' }, h);
    expect(plain.status).toBe(201);
    expect((await app.post('/v1/memories', ws.key, { name: 'x', source_type: 'video' }, h)).status).toBe(400);
    expect(
      (await app.get('/v1/memories?source_type=text&sortBy=name&sortDirection=asc', ws.key, h)).body,
    ).toMatchObject({ total: 3 });

    // Recollections: members by id, stats counted from the rows.
    const { asset, job_id } = AssetWithJob.parse(
      (
        await app.post(
          '/v1/assets',
          ws.key,
          {
            name: 'bilby',
            content: Array.from({ length: 30 }, (_, i) => `Bilby fact ${i}: they dig spiral burrows.`).join('\n\n'),
          },
          h,
        )
      ).body,
    );
    await ingested(ws, job_id);
    expect(
      (await app.post('/v1/recollections', ws.key, { name: 'bad', resource_ids: [crypto.randomUUID()] }, h)).status,
    ).toBe(400);
    const rec = Recollection.parse(
      (
        await app.post(
          '/v1/recollections',
          ws.key,
          { name: 'Marsupials', description: 'what we know', resource_ids: [gen.memory.id, kept.memory.id, asset.id] },
          h,
        )
      ).body,
    );
    expect(rec.members).toHaveLength(3);
    const stats = RecollectionStats.parse((await app.get(`/v1/recollections/${rec.id}/stats`, ws.key)).body);
    const ids = [gen.memory.id, kept.memory.id, asset.id];
    const db = app.deps.db.collection('chunks');
    expect(stats).toEqual({
      resource_count: 3,
      chunk_count: await db.countDocuments({ resourceId: { $in: ids } }),
      embedding_lane_chunk_row_count: await db.countDocuments({ resourceId: { $in: ids }, embedding: { $ne: null } }),
    });
    expect(stats.chunk_count).toBeGreaterThan(stats.embedding_lane_chunk_row_count);
    const upd = Recollection.parse(
      (await app.put(`/v1/recollections/${rec.id}`, ws.key, { name: 'Marsupials 2', remove_resource_ids: [asset.id] }))
        .body,
    );
    expect(upd).toMatchObject({ name: 'Marsupials 2' });
    expect(upd.members).toHaveLength(2);
    expect((await app.put(`/v1/recollections/${rec.id}`, ws.key, {})).status).toBe(400);
    expect((await app.get('/v1/recollections', ws.key, h)).body).toMatchObject({ total: 1 });

    const bulk = await app.post(
      '/v1/memories/bulk-delete',
      ws.key,
      { ids: [gen.memory.id, kept.memory.id, crypto.randomUUID()] },
      h,
    );
    expect(bulk.body).toEqual({ deletedCount: 2, notFoundCount: 1 });
    expect((await app.post('/v1/memories/bulk-delete', ws.key, { ids: ['x'] }, h)).status).toBe(400);
    expect(RecollectionStats.parse((await app.get(`/v1/recollections/${rec.id}/stats`, ws.key)).body)).toEqual({
      resource_count: 0,
      chunk_count: 0,
      embedding_lane_chunk_row_count: 0,
    });
    expect((await app.del(`/v1/recollections/${rec.id}`, ws.key)).status).toBe(200);
    expect((await app.get(`/v1/recollections/${rec.id}`, ws.key)).status).toBe(404);
  });

  it('a second workspace sees none of it', async () => {
    const ws = await buildWorkspace(app);
    const other = await buildWorkspace(app);
    const { asset } = AssetWithJob.parse(
      (await app.post('/v1/assets', ws.key, { name: 'secret', content: 'the password is swordfish' }, ws.brainHeaders))
        .body,
    );
    const { artifact } = ArtifactWithJob.parse(
      (await app.post('/v1/artifacts', ws.key, { title: 'secret', content: 'x' }, ws.brainHeaders)).body,
    );
    const memory = MemoryWithJob.parse(
      (await app.post('/v1/memories', ws.key, { name: 'secret', source_type: 'text' }, ws.brainHeaders)).body,
    ).memory;
    const rec = Recollection.parse(
      (await app.post('/v1/recollections', ws.key, { name: 'secret' }, ws.brainHeaders)).body,
    );
    for (const p of [
      `/v1/assets/${asset.id}`,
      `/v1/assets/${asset.id}/chunks`,
      `/v1/assets/${asset.id}/versions`,
      `/v1/artifacts/${artifact.id}`,
      `/v1/artifacts/${artifact.id}/body`,
      `/v1/memories/${memory.id}`,
      `/v1/recollections/${rec.id}`,
      `/v1/recollections/${rec.id}/stats`,
      `/v1/resources/assets/${asset.id}`,
    ]) {
      expect((await app.get(p, other.key)).status, p).toBe(404);
    }
    expect((await app.put(`/v1/assets/${asset.id}`, other.key, { name: 'x' })).status).toBe(404);
    expect(
      (await app.post('/v1/artifacts/patch', other.key, { artifact_id: artifact.id, base_version: 1, title: 'x' }))
        .status,
    ).toBe(404);
    expect((await app.post('/v1/memories/bulk-delete', other.key, { ids: [memory.id] })).body).toEqual({
      deletedCount: 0,
      notFoundCount: 1,
    });
    expect(
      (
        await app.post('/v1/resources/move', other.key, {
          move_profile: 'broad',
          moves: [{ resource_id: asset.id, path: 'stolen' }],
        })
      ).body,
    ).toEqual({ moved: [], not_found: [asset.id] });
    expect((await app.get('/v1/assets', other.key)).body).toMatchObject({ total: 0 });
    expect((await app.get('/v1/resources/tree?tree_profile=broad', other.key)).body).toMatchObject({ total: 0 });
    expect(
      (await app.post('/v1/recollections', other.key, { name: 'steal', resource_ids: [memory.id] }, other.brainHeaders))
        .status,
    ).toBe(400);
  });
});

describe('config', () => {
  it('re-embeds what carries vectors of another model (a model change), one job per resource', async () => {
    const ws = await buildWorkspace(app);
    const { asset, job_id } = AssetWithJob.parse(
      (
        await app.post(
          '/v1/assets',
          ws.key,
          { name: 'old vectors', content: 'Quolls are carnivorous marsupials.' },
          ws.brainHeaders,
        )
      ).body,
    );
    await ingested(ws, job_id);
    const chunks = app.deps.db.collection('chunks');
    // As if these vectors came from the model configured before.
    await chunks.updateMany({ resourceId: asset.id }, { $set: { 'embedding.model': 'openai/text-embedding-old' } });
    const res = await app.post('/v1/config/embedding-model/reembed', ws.key, {});
    expect(res.status).toBe(200);
    const out = res.body as { model: string; started: { resource_id: string; job_id: string }[]; remaining: boolean };
    expect(out).toMatchObject({ model: 'local/wink-sg-100d', remaining: false });
    expect(out.started.map((x) => x.resource_id)).toEqual([asset.id]);
    await ingested(ws, out.started[0].job_id);
    expect(await chunks.countDocuments({ resourceId: asset.id, 'embedding.model': 'local/wink-sg-100d' })).toBe(
      await chunks.countDocuments({ resourceId: asset.id }),
    );
    expect(
      ((await app.post('/v1/config/embedding-model/reembed', ws.key, {})).body as { started: unknown[] }).started,
    ).toEqual([]);
    expect((await app.post('/v1/config/embedding-model/reembed', await ws.jwt(['member']), {})).status).toBe(403);
  });

  it('reports the embedding model and cost estimates from the configuration', async () => {
    const ws = await buildWorkspace(app);
    expect((await app.get('/v1/config/embedding-model', ws.key)).body).toEqual({
      embedding_model: 'local/wink-sg-100d',
      embedding_dimension: 100,
    });
    expect((await app.get('/v1/config/cost-estimates', ws.key)).body).toEqual({
      embed_per_1k_tokens_usd: 0,
      embed_model: 'local/wink-sg-100d',
      rerank_per_query_usd: 0,
      vector_search_per_query_usd: 0,
      priced: true,
    });
  });
});
