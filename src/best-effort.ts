import type { Logger } from './logger.js';

/**
 * Runs a step whose failure must not fail the caller (a notification after the write it follows
 * is stored, a cleanup), and logs what it swallows: a failure here is worth a line, never silence.
 */
export async function bestEffort<T>(
  log: Logger | undefined,
  what: string,
  step: Promise<T> | (() => Promise<T>),
): Promise<T | undefined> {
  try {
    return await (typeof step === 'function' ? step() : step);
  } catch (err) {
    log?.warn({ err }, `${what} failed (the request's own write stands)`);
    return undefined;
  }
}
