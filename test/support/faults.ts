import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbedded, type EmbeddedServices } from '../../scripts/embedded.js';

/** The pid of the process listening on a loopback TCP port (from `ss`), so a test can stall or kill it. */
export function pidListeningOn(port: number): number {
  const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
  const m = /pid=(\d+)/.exec(out);
  if (!m) throw new Error(`no process listens on port ${port}: ${out}`);
  return Number(m[1]);
}

const portOf = (url: string): number => Number(new URL(url).port);

/**
 * A store and a Redis of this test file's own (real FerretDB and redis-server on free loopback
 * ports), so that stalling them (SIGSTOP) or stopping them does not disturb other test files that
 * share the suite's services. Temporal stays the suite's.
 */
export async function startOwnStoreAndRedis(): Promise<{
  mongoUri: string;
  redisUrl: string;
  mongoPid: number;
  redisPid: number;
  stop(): Promise<void>;
}> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-faults-'));
  const services: EmbeddedServices = await startEmbedded({
    dataDir,
    need: { mongo: true, redis: true, temporal: false },
    temporalUi: false,
    log: () => undefined,
  });
  const mongoUri = services.mongoUri!;
  const redisUrl = services.redisUrl!;
  return {
    mongoUri,
    redisUrl,
    mongoPid: pidListeningOn(portOf(mongoUri)),
    redisPid: pidListeningOn(portOf(redisUrl)),
    async stop() {
      await services.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Stops a process (SIGSTOP) until the returned function resumes it (SIGCONT). */
export function stall(pid: number): () => void {
  process.kill(pid, 'SIGSTOP');
  let resumed = false;
  return () => {
    if (!resumed) {
      resumed = true;
      process.kill(pid, 'SIGCONT');
    }
  };
}
