/**
 * `npm run secrets:reseal`: the second half of a key rotation (docs/tools.md). With the new key in
 * SECRETS_KEY and the old one in SECRETS_KEYS_OLD, re-seals every stored secret under the new key;
 * afterwards the old key can be removed from SECRETS_KEYS_OLD. Needs only MongoDB.
 */
import { loadConfig } from '../src/kernel/config.js';
import { createSecretBox } from '../src/crypto/secrets.js';
import { connectMongo } from '../src/kernel/store/client.js';
import { createConnectionRepo } from '../src/connections/index.js';
import { resealSecrets } from '../src/connections/index.js';
import { createSecretRepo } from '../src/secrets/store.mongo.js';
import { createSecretService } from '../src/secrets/service.js';
import { createWebhookRepo } from '../src/webhooks/index.js';

const config = loadConfig();
const box = createSecretBox(config);
const { client, db } = await connectMongo(config.MONGODB_URI, config.MONGODB_DB);
try {
  const changed = await resealSecrets(createConnectionRepo(db), box);
  const workspaceSecrets = await createSecretService({ repo: createSecretRepo(db), box }).resealAll();
  // Webhook signing secrets (docs/webhooks.md): the repository re-seals them as it does workspace secrets.
  const webhookEndpoints = await createWebhookRepo(db).resealAll(box.keyId, (s) => box.reseal(s));
  console.log(
    `re-sealed under key ${box.keyId}: ${changed.integrations} integration secret(s), ${changed.connections} connection(s), ${changed.requests} pending connect request(s), ${workspaceSecrets} workspace secret(s); ${changed.expiredRequests} expired request(s) deleted; ${webhookEndpoints} webhook endpoint(s)`,
  );
} finally {
  await client.close();
}
