import { Redis } from 'ioredis';

/** One command connection per process; blocking readers take a duplicate (see api/sse.ts). */
export function createRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
}
export type { Redis };
