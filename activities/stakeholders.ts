import { Context } from '@temporalio/activity';
import type { Services } from '../src/compose/services.js';
import type { StakeholderExtractInput } from '../src/temporal/definitions.js';
import { permanentOn4xx } from './failures.js';

/** The `stakeholderExtract` workflow's activities: thin adapters over the stakeholder map service. */
export const createStakeholderMapActivities = ({ services }: { services: Services }) => ({
  stakeholderExtractPlan: (i: StakeholderExtractInput) =>
    permanentOn4xx(() => services.stakeholderMaps.extractPlan(i, Context.current().info.attempt)),
  stakeholderExtractApply: (i: StakeholderExtractInput) =>
    permanentOn4xx(() => services.stakeholderMaps.extractApply(i)),
  stakeholderExtractFail: (i: StakeholderExtractInput, reason: string) =>
    services.stakeholderMaps.extractFail(i, reason),
});
