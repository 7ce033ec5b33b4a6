/**
 * `npx tsx scripts/release-fixture.ts`: the data of this release, as it stores it, for the upgrade
 * test of the next releases (test/api/releases-upgrade.test.ts, docs/operations.md "Releases and
 * upgrades"). It starts embedded services in a temporary folder, the API and a worker of the
 * current code in this process, fills one workspace through the routes (neurons with versions,
 * traces, pathways, a run waiting on an approval, a cron receptor, a share link, memories,
 * assets, artifacts, budgets, keys), then writes to test/fixtures/releases/<version>/:
 *
 * - store.json: every document of every collection (Extended JSON: dates and binaries keep
 *   their types), sorted by collection and _id;
 * - blobs/: the blob folder (bodies of assets, artifacts, …);
 * - reads.json: each read route's path with the status and body this release answered, which
 *   the upgrade test asks again of the current code over the loaded data;
 * - manifest.json: the release, its data-format version and the fixture's credential.
 *
 * Run it once per release, when it is cut, and commit the folder.
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BSON, type Db, type Document } from 'mongodb';
import { createApp } from '../api/app.js';
import { loadConfig, VERSION } from '../src/kernel/config.js';
import { closeDeps, createDeps } from '../src/compose/deps.js';
import { createLogger } from '../src/kernel/logger.js';
import { DATA_FORMAT_VERSION, PLATFORM_COLLECTION, upgradeStore } from '../src/releases/index.js';
import { createServices } from '../src/compose/services.js';
import { createWorker } from '../worker/index.js';
import { startEmbedded } from './embedded.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const FIXTURES = path.join(ROOT, 'test/fixtures/releases');
/** The JWT secret of the fixture's deployment and of the test app that reads it (test/support/app.ts). */
export const FIXTURE_JWT_SECRET = 'test-secret-0123456789abcdef';

export interface Manifest {
  release: string;
  /** The data-format version the fixture's store holds (0: release 0.1.0, which recorded none). */
  data_format: number;
  created_at: string;
  workspace_id: string;
  brain_id: string;
  /** The workspace admin's API key (stored hashed in store.json; the test authenticates with it). */
  api_key: string;
  /** The subject of the workspace admin's JWT, for the routes that take a JWT only (API keys). */
  jwt_sub: string;
}

/** One read of a route: its path, the brain header when it needs one, and what this release answered. */
export interface RecordedRead {
  path: string;
  brain?: boolean;
  /** Read with the workspace admin's JWT (the route takes a JWT only). */
  jwt?: boolean;
  status: number;
  body: unknown;
}

/** A response body as this script reads it: the fixture's own responses, read loosely for their ids. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;
interface Reply {
  status: number;
  body: Loose;
}
type Call = (method: string, p: string, body?: unknown, brain?: boolean) => Promise<Reply>;

function client(url: string, key: string, brainId: string): Call {
  return async (method, p, body, brain) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (brain) headers['x-brain-id'] = brainId;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    const json = (res.headers.get('content-type') ?? '').includes('json');
    return { status: res.status, body: json && text ? (JSON.parse(text) as unknown) : text };
  };
}

const must = async (what: string, r: Promise<Reply>): Promise<Loose> => {
  const res = await r;
  if (res.status >= 300) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

async function until(what: string, fn: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Fills the workspace through the routes; returns the read paths to record. */
export async function populate(
  call: Call,
  jwtCall: Call,
  ws: { workspaceId: string; brainId: string },
): Promise<{ path: string; brain?: boolean; jwt?: boolean }[]> {
  const reads: { path: string; brain?: boolean; jwt?: boolean }[] = [];
  const read = (p: string, brain = false) => reads.push({ path: p, brain });

  // A neuron with two versions.
  const neuron = await must(
    'neuron',
    call('POST', '/v1/neurons', {
      name: 'Fixture agent',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini', instructions: 'Answer briefly.' },
    }),
  );
  await must(
    'neuron v2',
    call('PUT', `/v1/neurons/${neuron.id}`, { neuron_config: { instructions: 'Answer in one line.' } }),
  );
  read('/v1/neurons', true);
  read(`/v1/neurons/${neuron.id}`);
  read(`/v1/neurons/${neuron.id}/versions`);
  read(`/v1/neurons/${neuron.id}/versions/1`);
  read(`/v1/neurons/${neuron.id}/versions/2`);

  // A trace of three messages.
  const traceId = '7f0c4a52-2f4e-4d8e-9a55-0d6a1c0b0001';
  for (const content of ['hello', 'how are you?', 'fine'])
    await must(
      'trace message',
      call('POST', `/v1/traces/${traceId}/messages`, { content, metadata: { fixture: true } }),
    );
  read('/v1/traces');
  read(`/v1/traces/${traceId}`);
  read(`/v1/traces/${traceId}/messages`);

  // A pathway with a human approval, and a run of it waiting on the approval.
  const graph = {
    nodes: [
      { id: 's', type: 'start' },
      { id: 'h', type: 'human', data: { title: 'Ship it?' } },
      { id: 'y', type: 'output', data: { value: '"approved"' } },
      { id: 'n', type: 'output', data: { value: '"rejected"' } },
    ],
    edges: [
      { source: 's', target: 'h' },
      { source: 'h', target: 'y', handle: 'approve' },
      { source: 'h', target: 'n', handle: 'reject' },
    ],
  };
  const pathway = await must(
    'pathway',
    call('POST', '/v1/pathways', { name: 'Fixture approval', pathway_graph: graph }, true),
  );
  read('/v1/pathways', true);
  read(`/v1/pathways/${pathway.id}`);
  read(`/v1/pathways/${pathway.id}/versions`);
  const job = await must('run', call('POST', '/v1/jobs', { pathway_id: pathway.id, data: { x: 1 } }, true));
  const jobId = String(job.job_id);
  let interventionId = '';
  await until('the run to wait on its approval', async () => {
    const s = await call('GET', `/v1/jobs/${jobId}/status`);
    interventionId = String(s.body?.waitingFor?.interventionId ?? '');
    return s.body?.status === 'waiting' && Boolean(interventionId);
  });
  read(`/v1/jobs/${jobId}/status`);
  read(`/v1/jobs/${jobId}`);
  read('/v1/interventions');
  read(`/v1/interventions/${interventionId}`);

  // The neuron's receptor on a cron schedule, and a share link of it.
  const receptors = await must('receptors', call('GET', '/v1/receptors?limit=200', undefined, true));
  const r = (receptors.receptors as { id: string; slug: string; executable_target: { id: string } }[]).find(
    (x) => x.executable_target.id === neuron.id,
  )!;
  await must(
    'cron',
    call('PATCH', `/v1/receptors/${ws.workspaceId}/${r.slug}`, {
      active_channels: ['http', 'cron'],
      source_config: { activation: 'schedule', timing: { cron: '0 9 * * 1', timezone: 'Europe/Paris' } },
    }),
  );
  await must('share', call('POST', `/v1/receptors/${ws.workspaceId}/${r.slug}/share`, {}));
  read('/v1/receptors?limit=200', true);
  read(`/v1/receptors/${ws.workspaceId}/${r.slug}/share`);

  // Knowledge: a memory, an asset with a body, an artifact with a body.
  const { memory } = await must(
    'memory',
    call('POST', '/v1/memories', { name: 'Fixture notes', source_type: 'text' }, true),
  );
  read('/v1/memories', true);
  read(`/v1/memories/${memory.id}`, true);
  const { asset } = await must(
    'asset',
    call('POST', '/v1/assets', {
      name: 'numbat facts',
      content: 'The numbat eats termites. It lives in Western Australia.',
      brain_id: ws.brainId,
    }),
  );
  read('/v1/assets', true);
  read(`/v1/assets/${asset.id}`, true);
  read(`/v1/assets/${asset.id}/versions`, true);
  read(`/v1/assets/${asset.id}/chunks`, true);
  const { artifact } = await must(
    'artifact',
    call('POST', '/v1/artifacts', { title: 'Plan', content: 'one\ntwo\nthree' }, true),
  );
  read('/v1/artifacts', true);
  read(`/v1/artifacts/${artifact.id}`, true);
  read(`/v1/artifacts/${artifact.id}/body`, true);
  read(`/v1/artifacts/${artifact.id}/versions`, true);

  // A budget and a second key.
  const budget = await must(
    'budget',
    call('POST', '/v1/budgets', {
      scope: 'neuron',
      target_id: neuron.id,
      measure: 'tokens',
      period: 'month',
      limit: 100000,
      policy: 'pause',
    }),
  );
  read('/v1/budgets');
  read(`/v1/budgets/${budget.id}`);
  await must('key', jwtCall('POST', '/v1/api-keys', { name: 'fixture reader' }));
  reads.push({ path: '/v1/api-keys', jwt: true });
  read('/v1/brains');
  return reads;
}

/** Every collection's documents (the upgrade lease aside) in Extended JSON, sorted; release 0.1.0 recorded no data format. */
export async function dumpStore(db: Db, release: string): Promise<Record<string, Document[]>> {
  const out: Record<string, Document[]> = {};
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
  for (const name of names) {
    let docs = await db.collection(name).find({}).sort({ _id: 1 }).toArray();
    if (name === PLATFORM_COLLECTION)
      docs = docs.filter((d) => {
        const id = d._id as unknown;
        return id !== 'upgrade_lease' && !(release === '0.1.0' && id === 'data_format');
      });
    if (docs.length) out[name] = docs;
  }
  return out;
}

/** Loads a fixture's store.json into an empty database and its blobs into a data folder. */
export async function loadFixture(db: Db, dataDir: string, dir: string): Promise<void> {
  const store = BSON.EJSON.parse(await readFile(path.join(dir, 'store.json'), 'utf8'), { relaxed: false }) as Record<
    string,
    Document[]
  >;
  for (const [name, docs] of Object.entries(store)) await db.collection(name).insertMany(docs);
  const blobs = path.join(dir, 'blobs');
  if ((await readdir(dir)).includes('blobs')) await cp(blobs, path.join(dataDir, 'blobs'), { recursive: true });
}

export async function readFixture(dir: string): Promise<{ manifest: Manifest; reads: RecordedRead[] }> {
  return {
    manifest: JSON.parse(await readFile(path.join(dir, 'manifest.json'), 'utf8')) as Manifest,
    reads: JSON.parse(await readFile(path.join(dir, 'reads.json'), 'utf8')) as RecordedRead[],
  };
}

async function main(): Promise<void> {
  const say = (l: string) => console.log(`[release-fixture] ${l}`);
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cortex-fixture-'));
  const embedded = await startEmbedded({
    dataDir: tmp,
    need: { mongo: true, redis: true, temporal: true },
    temporalUi: false,
    log: say,
  });
  let server: Server | undefined;
  try {
    const dataDir = path.join(tmp, 'data');
    const config = loadConfig(
      {},
      {
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        MONGODB_URI: embedded.mongoUri!,
        MONGODB_DB: 'cortex_fixture',
        REDIS_URL: embedded.redisUrl!,
        TEMPORAL_ADDRESS: embedded.temporalAddress!,
        DATA_DIR: dataDir,
        JWT_SECRET: FIXTURE_JWT_SECRET,
      },
    );
    const log = createLogger(config.LOG_LEVEL, { component: 'release-fixture' });
    const deps = await createDeps(config, log);
    const services = createServices(deps);
    await upgradeStore(deps, services);
    server = createServer(createApp(deps, services).callback());
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { worker, connection } = await createWorker(deps);
    const running = worker.run();
    say(`release ${VERSION} (data format ${DATA_FORMAT_VERSION}) at ${url}`);

    const ws = await services.auth.provisionWorkspace({ slug: 'fixture' });
    const call = client(url, ws.key, ws.brainId);
    const jwtSub = '0b8f7c1e-5a3d-4c2b-9e10-f1c5e0a00001';
    const jwt = await services.auth.signJwt({ sub: jwtSub, workspace_id: ws.workspaceId, roles: ['workspace_admin'] });
    const jwtCall = client(url, jwt, ws.brainId);
    const paths = await populate(call, jwtCall, ws);
    // Ingestion and indexing settle before the store is read.
    await new Promise((r) => setTimeout(r, 3000));
    const reads: RecordedRead[] = [];
    for (const p of paths) {
      const res = await (p.jwt ? jwtCall : call)('GET', p.path, undefined, p.brain);
      reads.push({ ...p, status: res.status, body: res.body });
    }
    worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();

    const out = path.join(FIXTURES, VERSION);
    await rm(out, { recursive: true, force: true });
    await mkdir(out, { recursive: true });
    const store = await dumpStore(deps.db, VERSION);
    await writeFile(path.join(out, 'store.json'), BSON.EJSON.stringify(store, undefined, 1, { relaxed: false }) + '\n');
    await cp(path.join(dataDir, 'blobs'), path.join(out, 'blobs'), { recursive: true }).catch(() => undefined);
    await writeFile(path.join(out, 'reads.json'), JSON.stringify(reads, null, 1) + '\n');
    const manifest: Manifest = {
      release: VERSION,
      data_format: VERSION === '0.1.0' ? 0 : DATA_FORMAT_VERSION,
      created_at: new Date().toISOString(),
      workspace_id: ws.workspaceId,
      brain_id: ws.brainId,
      api_key: ws.key,
      jwt_sub: jwtSub,
    };
    await writeFile(path.join(out, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    say(`wrote ${path.relative(ROOT, out)}: ${Object.keys(store).length} collections, ${reads.length} reads`);
    await services.search.stop();
    await closeDeps(deps);
  } finally {
    server?.close();
    server?.closeAllConnections();
    await embedded.stop();
    await rm(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
