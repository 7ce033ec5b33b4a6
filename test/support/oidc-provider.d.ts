/** The part of oidc-provider (a real OpenID provider, used by the connection tests) those tests touch. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }
  interface Configuration {
    clients?: Record<string, unknown>[];
    findAccount?(ctx: unknown, id: string): Promise<Account | undefined>;
    features?: Record<string, unknown>;
    pkce?: { required?: () => boolean };
    ttl?: Record<string, number>;
    issueRefreshToken?: () => Promise<boolean>;
    rotateRefreshToken?: boolean | (() => boolean);
    scopes?: string[];
  }
  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
