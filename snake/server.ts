import { createSnakeApp, createSnakeLogger } from './app.js';
import { loadSnakeConfig } from './config.js';

/*
 * Entry point (`tsx snake/server.ts`, started by `npm run up` next to the API). Binds the app to
 * SNAKE_HOST:SNAKE_PORT and closes cleanly on SIGINT/SIGTERM: stop accepting, let in-flight ticks finish
 * for a few seconds, then drop what is left.
 */
const SHUTDOWN_GRACE_MS = 5000;

const config = loadSnakeConfig();
const logger = createSnakeLogger(config.logLevel);
const app = createSnakeApp({ config, logger });

const server = app.listen(config.port, config.host, () => {
  logger.info(
    { url: `http://${config.host}:${config.port}/`, neuron: config.neuron, api: config.apiUrl },
    'snake service listening',
  );
  if (!config.apiKey) logger.warn('CORTEX_API_KEY is not set: every tick will use the fallback heading');
});

let stopping = false;
function shutdown(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'snake service stopping');
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => {
    server.closeAllConnections();
    process.exit(0);
  }, SHUTDOWN_GRACE_MS).unref();
}
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
