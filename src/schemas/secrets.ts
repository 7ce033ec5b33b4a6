import { z } from 'zod';
import { notPrototypeName, RESERVED_NAME_MESSAGE } from './common.js';

export const SecretParams = z.object({
  name: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be a letter or _, then letters, digits or _ (at most 64)')
    .refine(notPrototypeName, RESERVED_NAME_MESSAGE),
});

export const SecretPutBody = z
  .strictObject({
    value: z
      .string()
      .min(1, 'must not be empty')
      .refine((v) => Buffer.byteLength(v) <= 16 * 1024, 'must be at most 16 KiB'),
  })
  .meta({ id: 'SecretPutBody' });

/** A secret as routes show it: never its value. */
export const Secret = z
  .object({
    name: z.string(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Secret' });

export const SecretList = z.object({ secrets: z.array(Secret) }).meta({ id: 'SecretList' });
