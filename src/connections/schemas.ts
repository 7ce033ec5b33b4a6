import { z } from 'zod';
import { notPrototypeName, RESERVED_NAME_MESSAGE, Uuid } from '../kernel/schemas.js';

const HttpsOrLoopback = z
  .url()
  .refine(
    (u) => /^https:\/\//.test(u) || /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//.test(u),
    'must be an https URL (http only on loopback, for development)',
  );

export const IntegrationBody = z
  .object({
    integration_id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'lowercase letters, digits, _ and -')
      .refine(notPrototypeName, RESERVED_NAME_MESSAGE),
    name: z.string().min(1).max(200).optional(),
    authorization_endpoint: HttpsOrLoopback,
    token_endpoint: HttpsOrLoopback,
    scopes: z.array(z.string().min(1).max(200)).max(50).default([]),
    client_id: z.string().min(1).max(500),
    client_secret: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .meta({ description: 'stored sealed (AES-256-GCM); never returned' }),
    client_secret_env: z
      .string()
      .regex(/^[A-Z][A-Z0-9_]*$/)
      .optional()
      .meta({
        description:
          'or: the environment variable of the server that holds it; only a name the operator lists in OAUTH_CLIENT_SECRET_ENVS (else 400)',
      }),
    per: z.enum(['user', 'workspace']).default('user'),
    mcp_server_url: z
      .url()
      .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL')
      .optional()
      .meta({
        description:
          "the integration's MCP server (Streamable HTTP): where the tools named by reflex tool sets are listed and called, with the connection's token",
      }),
  })
  .strict()
  .meta({ id: 'IntegrationBody' });
export type IntegrationBody = z.infer<typeof IntegrationBody>;
export const Integration = z
  .object({
    integration_id: z.string(),
    name: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    scopes: z.array(z.string()),
    client_id: z.string(),
    has_client_secret: z.boolean(),
    per: z.enum(['user', 'workspace']),
    mcp_server_url: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Integration' });
export const IntegrationParams = z.object({
  integration_id: z.string().min(1).max(64).refine(notPrototypeName, RESERVED_NAME_MESSAGE),
});

export const ConnectBody = z
  .object({
    callbackUrl: z
      .url()
      .optional()
      .meta({ description: 'where the browser goes after connecting; must be on OAUTH_CALLBACK_ALLOW' }),
    integration_id: z
      .string()
      .optional()
      .meta({ description: "which of the reflex's integrations (default: the first not connected)" }),
  })
  .strict();
export const ConnectAccepted = z.object({ redirectUrl: z.string(), connectionRequestId: z.string() });
export const CallbackQuery = z.object({
  connectionRequestId: z.string().optional(),
  request_id: z.string().optional(),
  code: z.string().max(4000).optional(),
  state: z.string().max(500).optional(),
  error: z.string().max(200).optional(),
  error_description: z.string().max(1000).optional(),
});
export const CallbackResult = z.object({ connectedAccountId: z.string(), success: z.literal(true) });
export const ConnectionView = z.object({ connectedAccountId: z.string().nullable(), connected: z.boolean() });
/** ReflexConnectionStatus (docs/decisions.md): one entry per integration the reflex needs. */
export const ReflexConnectionStatus = z
  .object({
    reflexId: z.string(),
    connected: z.boolean().meta({ description: 'every required integration is connected' }),
    integrations: z.array(
      z.object({
        integration_id: z.string(),
        configured: z.boolean(),
        per: z.enum(['user', 'workspace']).nullable(),
        connected: z.boolean(),
        connectedAccountId: z.string().nullable(),
        expires_at: z.string().nullable(),
        refreshable: z.boolean(),
        scope: z.string().nullable(),
        action: z.enum(['none', 'connect', 'configure']),
      }),
    ),
  })
  .meta({ id: 'ReflexConnectionStatus' });
export const BatchBody = z.object({ reflexIds: z.array(Uuid).min(1).max(100) }).strict();
export const CheckBatchBody = z.object({ reflexIds: z.array(Uuid).max(100).optional() }).strict();
