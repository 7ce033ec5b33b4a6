import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from './errors.js';

/** Shapes shared by every resource family. */
export const Uuid = z.uuid({ message: 'must be a UUID' });

/**
 * The names `Object.prototype` answers for (`constructor`, `toString`, `__proto__`…) and
 * `prototype`: a name a tenant chooses that later keys a table or a template's context (a secret,
 * an integration) is never one of them (docs/security.md, "No lookup by request text").
 */
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype']);
export const RESERVED_NAME_MESSAGE = 'is reserved (a name of Object.prototype)';
export const notPrototypeName = (name: string): boolean => !PROTOTYPE_NAMES.has(name);
export const IdParams = z.object({ id: Uuid });
export const ErrorBody = z
  .object({
    message: z.string().meta({ description: 'safe to show to the caller' }),
    code: z
      .enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]])
      .meta({ description: 'stable machine-readable code; see the error table in the API description' }),
  })
  .meta({ id: 'Error' });

/** RFC 9110 `token` (tchar) and `quoted-string` without obs-text: printable ASCII only, never CR, LF or NUL. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~]|\\\\[\\t -~])*"';
const MEDIA_TYPE_RE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*$`);
/** Longest media type accepted (RFC 6838 bounds type and subtype at 127 characters each). */
const MEDIA_TYPE_MAX = 255;

/** True when `s` is a media type a response header may carry as it is (RFC 9110 §8.3.1). */
export const isMediaType = (s: string): boolean => s.length <= MEDIA_TYPE_MAX && MEDIA_TYPE_RE.test(s);

/**
 * Every content type a tenant gives the platform (artifacts, assets, uploads' declared types): RFC 9110
 * `type/subtype` with `; name=value` parameters, printable ASCII, at most MEDIA_TYPE_MAX characters. A
 * content type is echoed in a response header later, so CR, LF and other control characters never get in.
 */
export const MediaType = z
  .string()
  .max(MEDIA_TYPE_MAX)
  .refine(isMediaType, 'must be a media type: type/subtype with optional ; name=value parameters (RFC 9110)')
  .meta({ description: 'a media type, e.g. text/markdown or text/plain; charset=utf-8' });

/**
 * limit/offset/cursor as query strings; each list route sets its own default limit. Every list
 * pages by key (src/kernel/store/paging.ts, docs/decisions.md "Lists that page by key").
 */
export const paging = (defaultLimit: number, max = 200) => ({
  limit: z.coerce.number().int().min(1).max(max).default(defaultLimit),
  offset: z.coerce.number().int().min(0).default(0).meta({
    description:
      'rows to skip; correct at any depth, but its cost grows with the offset: follow next_cursor for deep pages',
  }),
  cursor: z.string().min(1).max(2000).optional().meta({
    description:
      'next_cursor of the previous page: the page after it, the same cost at any depth (not combined with a non-zero offset); `first` starts cursor paging at the first page (on GET /v1/jobs and GET /v1/traces, whose bodies carry next_cursor and total_exact only when cursor is sent)',
  }),
});
/** The paging fields of every list response, next to the list's own `total`, `limit`, `offset` (and `has_more` where it has one). */
export const pageFields = {
  has_more: z.boolean().meta({ description: 'true when rows follow this page' }),
  next_cursor: z.string().nullable().meta({ description: 'pass as cursor for the next page; null on the last page' }),
  total_exact: z.boolean().meta({
    description:
      'true: total is the exact count; false: more than 1,000 rows match and total is a lower bound (lists never count a whole history)',
  }),
};
/**
 * The paging fields of the two lists whose body the API reference fixes (GET /v1/jobs: jobs, total,
 * limit, offset; GET /v1/traces: also has_more): the cursor fields appear when the request pages by
 * cursor (`cursor`, or `cursor=first` for the first page).
 */
export const optionalPageFields = {
  has_more: pageFields.has_more.optional(),
  next_cursor: pageFields.next_cursor.optional(),
  total_exact: pageFields.total_exact.optional(),
};
/** `total` of a list response (see total_exact). */
export const PageTotal = z.number().meta({
  description:
    'rows matching the filter: exact up to 1,000 (and on the last page of an offset walk), else a lower bound with total_exact false',
});
export const SortDirection = z.enum(['asc', 'desc']);
export const IsoDate = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date');
/** Any JSON object supplied by a client (stored intact through the blob codec). */
export const JsonObject = z.record(z.string(), z.unknown());
/** 'true'/'1' query flags. */
export const QueryBool = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
  .transform((v) => v === true || v === 'true' || v === '1');
export const SuccessBody = z.object({ success: z.literal(true) });

/**
 * A request body that refuses keys it does not know, naming them and saying where the run's data
 * goes: `{"amount": 50}` sent to execute is a 400 ("unknown key "amount": …"), never a run with
 * `{}` that takes the wrong branch.
 */
export const strictBody = <S extends z.core.$ZodLooseShape>(shape: S, where: string) =>
  z.strictObject(shape, {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? `unknown key${iss.keys.length > 1 ? 's' : ''} ${iss.keys.map((k) => `"${k}"`).join(', ')}: ${where}`
        : undefined,
  });
