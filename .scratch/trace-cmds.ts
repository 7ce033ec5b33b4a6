import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbedded } from '../scripts/embedded.js';
import { buildWorkspace, startTestApp } from '../test/support/app.js';
import { startTestWorker } from '../test/support/worker.js';
import { startScriptedOpenAI } from '../test/support/scripted-openai.js';
import { settleJob } from '../test/support/jobs.js';

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'trace-'));
const svc = await startEmbedded({ dataDir, need: { mongo: true, redis: true, temporal: true }, temporalUi: false, log: () => undefined });
process.env.MONGODB_URI = svc.mongoUri; process.env.REDIS_URL = svc.redisUrl; process.env.TEMPORAL_ADDRESS = svc.temporalAddress;
const llm = await startScriptedOpenAI({ models: ['gpt-4o-mini'] });
llm.setDefault(() => ({ chunks: ['ok'], usage: { prompt_tokens: 10, completion_tokens: 1 } }));
const app = await startTestApp({ OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'x', MONGODB_URI: svc.mongoUri!, REDIS_URL: svc.redisUrl!, TEMPORAL_ADDRESS: svc.temporalAddress! });
const worker = await startTestWorker(app);
const ws = await buildWorkspace(app);
const n = await app.post('/v1/neurons', ws.key, { name: 'x', brain_id: ws.brainId, neuron_config: { model: 'openai/gpt-4o-mini' } });
for (let i = 0; i < 3; i++) { const inv = await app.post(`/v1/neurons/${n.body.id}/invoke`, ws.key, { message: 'warm' }); await settleJob(app, ws.key, String(inv.body.job_id)); }
await new Promise((r) => setTimeout(r, 500));
const log: string[] = [];
const t0 = performance.now();
app.deps.mongo.on('commandStarted', (e) => {
  const c = e.command as Record<string, unknown>;
  const coll = String(c[e.commandName] ?? '');
  const detail = e.commandName === 'find' ? JSON.stringify(c.filter) : e.commandName === 'update' ? JSON.stringify((c.updates as { q: unknown }[])[0].q) + ' ' + JSON.stringify(Object.keys((c.updates as { u: object }[])[0].u)) : e.commandName === 'findAndModify' ? JSON.stringify(c.query) : e.commandName === 'delete' ? JSON.stringify((c.deletes as { q: unknown }[])[0].q) : e.commandName === 'insert' ? `n=${(c.documents as unknown[]).length}` : e.commandName === 'aggregate' ? JSON.stringify(c.pipeline).slice(0, 150) : '';
  log.push(`${(performance.now() - t0).toFixed(1).padStart(7)} ${e.commandName.padEnd(14)} ${coll.padEnd(18)} ${detail.slice(0, 160)}`);
});
const inv = await app.post(`/v1/neurons/${n.body.id}/invoke`, ws.key, { message: 'trace me' });
log.push(`${(performance.now() - t0).toFixed(1).padStart(7)} ---- 202`);
await settleJob(app, ws.key, String(inv.body.job_id));
await new Promise((r) => setTimeout(r, 500));
console.log(log.join('\n'));
await worker.stop(); await app.close(); await llm.close(); await svc.stop();
process.exit(0);
