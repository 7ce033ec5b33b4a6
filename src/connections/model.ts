/**
 * An OAuth 2 integration an admin configured for the workspace (authorization and token
 * endpoints, scopes, client). The client secret is sealed (src/crypto/secrets.ts) or named as
 * an environment variable; no route returns it.
 */
export interface IntegrationDoc {
  _id: string;
  workspaceId: string;
  integrationId: string;
  name: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  scopes: string[];
  clientId: string;
  clientSecretSealed: string | null;
  clientSecretEnv: string | null;
  /**
   * The integration's own MCP server (Streamable HTTP): the tools a reflex names in a tool set
   * (`tools: [{ integration_id, tools }]`) are listed and called there, with the connection's
   * token. Null: the integration only provides tokens (for reflexes with their own server_url or
   * http_tools). Absent on integrations stored before it existed.
   */
  mcpServerUrl?: string | null;
  /** user: each person connects their own account (default); workspace: one account for everyone. */
  per: 'user' | 'workspace';
  createdAt: Date;
  updatedAt: Date;
}

/** One connect attempt: binds the OAuth `state` and the PKCE verifier to the request and its user. */
export interface ConnectionRequestDoc {
  _id: string;
  workspaceId: string;
  reflexId: string;
  integrationId: string;
  userId: string | null;
  stateHash: string;
  verifierSealed: string;
  redirectUri: string;
  callbackUrl: string | null;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

/** A connected account: the tokens, sealed. `ownerId` is the user, or `workspace` for a workspace-wide connection. */
export interface ConnectionDoc {
  _id: string;
  workspaceId: string;
  integrationId: string;
  ownerId: string;
  accessSealed: string;
  refreshSealed: string | null;
  expiresAt: Date | null;
  scope: string | null;
  keyId: string;
  createdAt: Date;
  refreshedAt: Date | null;
  updatedAt: Date;
}
