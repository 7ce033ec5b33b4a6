import { Context } from '@temporalio/activity';
import type { Services } from '../src/compose/services.js';
import type { IngestInput } from '../src/temporal/definitions.js';
import { createLimiter } from '../src/kernel/limits.js';
import { permanentOn4xx } from './failures.js';

const attempt = () => Context.current().info.attempt;

/**
 * The `ingest` workflow's activities: thin adapters over the ingest service. The heavy steps
 * (chunking, describing, embedding) run at most BACKGROUND_CONCURRENCY at a time per worker
 * process (src/kernel/limits.ts), so a burst of ingests cannot starve the runs and requests beside it.
 */
export const createIngestActivities = ({ services }: { services: Services }) => {
  const background = createLimiter(services.config.BACKGROUND_CONCURRENCY);
  return {
    ingestPrepare: (i: IngestInput) => background.run(() => permanentOn4xx(() => services.ingest.prepare(i))),
    ingestWhole: (i: IngestInput, batch: number) =>
      background.run(() => permanentOn4xx(() => services.ingest.whole(i, batch, attempt()))),
    ingestDescribe: (i: IngestInput) =>
      background.run(() => permanentOn4xx(() => services.ingest.describe(i, attempt()))),
    ingestEmbed: (i: IngestInput, from: number, to: number, total: number) =>
      background.run(() => permanentOn4xx(() => services.ingest.embed(i, from, to, total, attempt()))),
    ingestFinish: (i: IngestInput) => services.ingest.finish(i),
    ingestFail: (i: IngestInput, reason: string) => services.ingest.fail(i, reason),
  };
};
