import { z } from 'zod';
import { Uuid } from '../kernel/schemas.js';
import { TranscriptSegment } from './schemas.js';

export const VocabularyDefaultsQuery = z.object({ vertical_id: z.string().max(64).optional() });
export const VocabularyDefaults = z
  .object({
    vertical_id: z.string(),
    core: z.array(z.string()),
    vertical: z.array(z.string()),
    merged_static: z.array(z.string()),
    verticals: z.array(z.string()),
  })
  .meta({ id: 'SttVocabularyDefaults' });
export const PrewarmBody = z
  .object({
    workspace_id: Uuid,
    brain_id: Uuid.optional(),
    vertical_id: z.string().max(64).optional(),
    terms: z.array(z.string().trim().min(1).max(100)).max(500).optional().meta({
      description: 'saved as the workspace terms (or the brain terms with brain_id); omitted: the saved ones are kept',
    }),
  })
  .strict()
  .meta({ id: 'SttVocabularyPrewarmBody' });
export const PrewarmResult = z
  .object({
    workspace_id: z.string(),
    brain_id: z.string().nullable(),
    vertical_id: z.string(),
    term_count: z.number(),
    counts: z.object({ core: z.number(), vertical: z.number(), workspace: z.number(), brain: z.number() }),
    cached_until: z.string(),
  })
  .meta({ id: 'SttVocabularyPrewarm' });

export const TranscriptionRuntime = z
  .object({
    available: z.boolean(),
    gladia_configured: z.boolean(),
    reason: z.string().optional(),
    provider: z.enum(['pocketsphinx', 'gladia', 'openai']),
    hints: z.enum(['custom_vocabulary', 'prompt', 'none']),
    live: z.boolean(),
    batch: z.boolean(),
  })
  .meta({ id: 'TranscriptionRuntime' });

export const TranscribeBody = z
  .object({
    source: z
      .object({
        type: z
          .enum(['attachment_id', 'attachment', 'asset_id', 'asset'])
          .meta({ description: 'attachment_id (POST /v1/chat/attachments) or asset_id (POST /v1/assets)' }),
        id: Uuid,
      })
      .strict(),
    locale: z
      .string()
      .regex(/^[a-zA-Z]{2,3}([-_][a-zA-Z0-9]{2,8})*$/, 'a language tag like en-US')
      .default('en-US'),
    diarize: z.boolean().default(false),
  })
  .strict()
  .meta({ id: 'TranscribeBody' });
export const TranscriptionResult = z
  .object({ text: z.string(), segments: z.array(TranscriptSegment).optional() })
  .meta({ id: 'TranscriptionResult' });
