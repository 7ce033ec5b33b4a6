/** Provisioning step: converts the offline word vectors to their compact form once (src/embeddings/wink.ts). */
import { loadConfig } from '../src/kernel/config.js';
import { convertWinkVectors } from '../src/embeddings/wink.js';

const config = loadConfig();
const started = Date.now();
const files = await convertWinkVectors(config.EMBEDDINGS_CACHE_DIR, (line) => console.log(`[embeddings] ${line}`));
console.log(`[embeddings] word vectors ready: ${files.data} (${Date.now() - started} ms)`);
