import { createHash } from 'node:crypto';

/**
 * A name-based UUID (version 5 layout over SHA-1): the same name always gives the same id, so an
 * insert of it is a claim (the same client_nonce on a trace maps to the same job, a brain's
 * default map and a trace's document have one id each).
 */
export function uuidFromName(name: string): string {
  const h = createHash('sha1').update(`cortex:${name}`).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}
