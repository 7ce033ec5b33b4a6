import { Context } from '@temporalio/activity';
import type { Services } from '../src/services/index.js';
import type { IngestInput } from '../src/temporal/definitions.js';
import { permanentOn4xx } from './failures.js';

const attempt = () => Context.current().info.attempt;

/** The `ingest` workflow's activities: thin adapters over the ingest service. */
export const createIngestActivities = ({ services }: { services: Services }) => ({
  ingestPrepare: (i: IngestInput) => permanentOn4xx(() => services.ingest.prepare(i)),
  ingestDescribe: (i: IngestInput) => permanentOn4xx(() => services.ingest.describe(i, attempt())),
  ingestEmbed: (i: IngestInput, from: number, to: number, total: number) => permanentOn4xx(() => services.ingest.embed(i, from, to, total, attempt())),
  ingestFinish: (i: IngestInput) => services.ingest.finish(i),
  ingestFail: (i: IngestInput, reason: string) => services.ingest.fail(i, reason),
});
