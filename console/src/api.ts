/**
 * The console's one client of the public API: the repository's TypeScript client
 * (clients/typescript: typed over the OpenAPI document, job and trace streams with cursor resume and
 * the reset rule), bound to this origin and the signed-in credential. The console has no private
 * route: every call goes through the API with the caller's rights.
 */
import {
  CortexApiError,
  createCortexClient,
  JobReply,
  toApiError,
  type components,
  type paths,
  type StreamEntry,
} from '../../clients/typescript/src/index';

export { JobReply };
export type { StreamEntry };

type Schemas = components['schemas'];
export type Job = Schemas['Job'];
export type Intervention = Schemas['Intervention'];
export type Trace = Schemas['Trace'];
export type Engram = Schemas['Engram'];
export type SessionContext = Schemas['SessionContext'];
export type Pathway = Schemas['Pathway'];

/**
 * The JSON body a route answers with its first 2xx status, from the OpenAPI document:
 * `ResponseOf<'get', '/v1/traces/{id}'>` is `{ trace: Trace }`. Pages name the route they call, so a
 * body read in the wrong shape is a type error, not a blank page.
 */
export type ResponseOf<M extends 'get' | 'post', P extends keyof paths> = paths[P][M] extends {
  responses: infer R;
}
  ? R extends { 200: { content: { 'application/json': infer B } } }
    ? B
    : R extends { 201: { content: { 'application/json': infer B } } }
      ? B
      : R extends { 202: { content: { 'application/json': infer B } } }
        ? B
        : never
  : never;

/** What a person signed in with; kept in session storage (never in a URL), gone when the tab closes. */
export interface Credential {
  /** An API key or a JWT, sent as `Authorization: Bearer …`. */
  token: string;
  /** Sent as X-Brain-Id (brain-scoped routes: executing a pathway, listing neurons). */
  brainId?: string;
}

/** The error a page shows: the API's `{ message, code }` (or a network failure's message). */
export interface ApiProblem {
  message: string;
  code: string;
  status?: number;
}

export function toProblem(e: unknown): ApiProblem {
  if (e instanceof CortexApiError) return { message: e.message, code: e.code, status: e.status };
  if (e instanceof Error) return { message: e.message, code: 'NETWORK' };
  return { message: String(e), code: 'UNKNOWN' };
}

/** A client over this origin; `raw` for routes whose typed form is awkward (a JSON body of any shape). */
export function createApi(cred: Credential) {
  const client = createCortexClient({ baseUrl: window.location.origin, apiKey: cred.token, brainId: cred.brainId });
  const headers: Record<string, string> = {
    authorization: `Bearer ${cred.token}`,
    ...(cred.brainId ? { 'x-brain-id': cred.brainId } : {}),
  };
  /** A JSON call by path; the API's `{ message, code }` is thrown as CortexApiError. */
  async function raw<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const res = await fetch(path, {
      method,
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!res.ok) throw toApiError({ error: await res.json().catch(() => undefined), response: res });
    return (res.status === 204 ? undefined : await res.json()) as T;
  }
  return {
    ...client,
    raw,
    get: <T>(path: string, signal?: AbortSignal) => raw<T>('GET', path, undefined, signal),
    post: <T>(path: string, body?: unknown) => raw<T>('POST', path, body ?? {}),
  };
}

export type Api = ReturnType<typeof createApi>;

/** A query string from the set values of an object (undefined and '' are left out). */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}

/** A schema of the OpenAPI document by name, for pages that read a route's answer (`ApiSchema<'UsageStats'>`). */
export type ApiSchema<K extends keyof Schemas> = Schemas[K];

/**
 * A multipart POST (a file upload: POST /v1/assets/ingest) with the signed-in credential; the
 * browser sets the multipart boundary. The API's `{ message, code }` is thrown as CortexApiError.
 */
export async function postForm<T>(cred: Credential, path: string, form: FormData): Promise<T> {
  const res = await fetch(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${cred.token}`, ...(cred.brainId ? { 'x-brain-id': cred.brainId } : {}) },
    body: form,
  });
  if (!res.ok) throw toApiError({ error: await res.json().catch(() => undefined), response: res });
  return (await res.json()) as T;
}
