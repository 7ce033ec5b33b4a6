import { Context } from '@temporalio/activity';
import type { Services } from '../src/compose/services.js';
import type { LiveTranscriptionInput, TranscriptionInput } from '../src/temporal/definitions.js';
import { permanentOn4xx } from './failures.js';

/** The `liveTranscription` and `transcription` workflows' activities: thin adapters over the transcription service. */
export const createTranscriptionActivities = ({ services }: { services: Services }) => ({
  liveBegin: (i: LiveTranscriptionInput) => services.transcription.liveBegin(i),
  liveCaption: (i: LiveTranscriptionInput, partialSeq: number) =>
    permanentOn4xx(() => services.transcription.liveCaption(i, partialSeq, Context.current().info.attempt)),
  liveFinalize: (i: LiveTranscriptionInput) =>
    permanentOn4xx(() => services.transcription.liveFinalize(i, Context.current().info.attempt)),
  liveFail: (i: LiveTranscriptionInput, reason: string) => services.transcription.liveFail(i, reason),
  transcribeRun: (i: TranscriptionInput) =>
    permanentOn4xx(() => services.transcription.batchRun(i, Context.current().info.attempt)),
  transcribeFail: (i: TranscriptionInput, reason: string) => services.transcription.batchFail(i, reason),
});
