import type { Logger } from './logger.js';

/**
 * Runs a step whose failure must not fail the caller (a notification after the write it follows
 * is stored, a cleanup, a background write), and logs what it swallows: a failure here is worth a
 * line, never silence. `what` names the step ("deleting the upload's blob"); the line says it
 * failed and was ignored, which is true wherever the helper is used.
 */
export async function bestEffort<T>(
  log: Logger | undefined,
  what: string,
  step: Promise<T> | (() => Promise<T>),
): Promise<T | undefined> {
  try {
    return await (typeof step === 'function' ? step() : step);
  } catch (err) {
    log?.warn({ err }, `${what} failed; ignored`);
    return undefined;
  }
}
