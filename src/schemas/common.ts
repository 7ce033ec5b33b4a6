import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../errors.js';

/** Shapes shared by every resource family. */
export const Uuid = z.uuid({ message: 'must be a UUID' });
export const IdParams = z.object({ id: Uuid });
export const ErrorBody = z.object({
  message: z.string().meta({ description: 'safe to show to the caller' }),
  code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]).meta({ description: 'stable machine-readable code; see the error table in the API description' }),
}).meta({ id: 'Error' });

/** limit/offset as query strings; each list route sets its own default limit. */
export const paging = (defaultLimit: number, max = 200) => ({
  limit: z.coerce.number().int().min(1).max(max).default(defaultLimit),
  offset: z.coerce.number().int().min(0).default(0),
});
export const SortDirection = z.enum(['asc', 'desc']);
export const IsoDate = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date');
/** Any JSON object supplied by a client (stored intact through the blob codec). */
export const JsonObject = z.record(z.string(), z.unknown());
/** 'true'/'1' query flags. */
export const QueryBool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');
/** X-Brain-Id header (routes marked (brain)). */
export const BrainHeader = z.object({ 'x-brain-id': z.uuid({ message: 'X-Brain-Id must be a UUID' }) });
export const SuccessBody = z.object({ success: z.literal(true) });
