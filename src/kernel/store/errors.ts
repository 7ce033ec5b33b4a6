import { MongoNetworkError, MongoOperationTimeoutError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { isDuplicateKey } from './claims.js';

/**
 * What a store failure means to a caller, without the driver's classes leaving the store adapters: a unique key
 * taken (an insert or an update that would duplicate), or the store out of reach (network, server
 * selection, an operation timed out). Anything else is not a store condition the API maps.
 */
export function storeFailure(err: unknown): 'duplicate' | 'unreachable' | null {
  if (err instanceof MongoServerError && isDuplicateKey(err)) return 'duplicate';
  if (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoOperationTimeoutError
  )
    return 'unreachable';
  return null;
}
