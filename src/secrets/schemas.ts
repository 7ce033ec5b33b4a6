import { z } from 'zod';
import { notPrototypeName, RESERVED_NAME_MESSAGE } from '../kernel/schemas.js';

export const SecretParams = z.object({
  name: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be a letter or _, then letters, digits or _ (at most 64)')
    .refine(notPrototypeName, RESERVED_NAME_MESSAGE),
});

/** An allowed host: an exact host name (`api.example.com`, an IPv4 address) or `*.suffix` (any host under it). */
const HOST_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
/** Who may save a graph that uses a secret (and so whose saved graphs get it at run time). */
const SecretUsableBy = z
  .enum(['admins', 'editors'])
  .meta({ description: 'admins: graphs saved by a workspace admin; editors: also by an editor of the pathway' });

export const SecretPutBody = z
  .strictObject({
    value: z
      .string()
      .min(1, 'must not be empty')
      .refine((v) => Buffer.byteLength(v) <= 16 * 1024, 'must be at most 16 KiB'),
    allowed_hosts: z
      .array(
        z
          .string()
          .max(253)
          .transform((h) => h.toLowerCase())
          .refine((h) => HOST_PATTERN.test(h), 'must be a host name (api.example.com) or *.suffix (*.example.com)'),
      )
      .max(20)
      .optional()
      .meta({ description: 'the only hosts a request carrying the secret may go to (absent: any the guard allows)' }),
    usable_by: SecretUsableBy.default('admins'),
  })
  .meta({ id: 'SecretPutBody' });

/** A secret as routes show it: never its value. */
export const Secret = z
  .object({
    name: z.string(),
    created_by: z.string().nullable(),
    allowed_hosts: z.array(z.string()).nullable(),
    usable_by: SecretUsableBy,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Secret' });

export const SecretList = z.object({ secrets: z.array(Secret) }).meta({ id: 'SecretList' });
