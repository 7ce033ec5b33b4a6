import { createServer } from 'node:http';
import { loadConfig } from '../src/config.js';
import { closeDeps, createDeps } from '../src/deps.js';
import { createLogger } from '../src/logger.js';
import { createServices } from '../src/services/index.js';
import { createApp } from './app.js';

/** API entry point: connect, ensure bootstrap identity, listen, and shut down gracefully. */
async function main() {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL, { component: 'api' });
  const deps = await createDeps(config, log);
  const services = createServices(deps);
  await services.auth.bootstrap();
  const server = createServer(createApp(deps, services).callback());
  server.listen(config.PORT, config.HOST, () => log.info({ url: `http://${config.HOST}:${config.PORT}` }, 'api listening'));
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'api stopping');
    server.close();
    server.closeAllConnections();
    await closeDeps(deps);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
