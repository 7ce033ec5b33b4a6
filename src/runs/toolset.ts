import type { ToolSpec } from '../llm/types.js';
import type { NeuronConfig } from '../neurons/index.js';
import type { Scope } from '../kernel/scope.js';
import type { NeuronRunInput } from '../temporal/definitions.js';
import { BUILTIN_TOOLS } from '../tools/builtin.js';
import { HttpToolDefs, type ToolBinding } from '../tools/remote.js';
import { connectionRefusal } from '../expressions/index.js';
import { metadataIntegration, reflexSaver } from '../reflexes/index.js';
import { MAX_DELEGATION_DEPTH, type PreparedRun, type RunDeps } from './shared.js';
import { own, setOwn } from '../kernel/own.js';

/** The tools a run offers its model, the sub-neurons its delegate_* tools run, and how each reflex tool is run. */
export interface Toolset {
  tools: ToolSpec[];
  delegates: PreparedRun['delegates'];
  bindings: Record<string, ToolBinding>;
}

type Reflex = Awaited<ReturnType<RunDeps['reflexes']['forNeuron']>>[number];
type ReflexToolSet = Reflex['tools'][number];

const toolName = (s: string) => s.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);

/** A toolset being gathered: `offer` adds a reflex tool under its own name, or prefixed with its reflex when the name is taken. */
class Offer implements Toolset {
  tools: ToolSpec[] = [];
  delegates: PreparedRun['delegates'] = [];
  bindings: Record<string, ToolBinding> = {};
  readonly offered = new Set<string>();

  offer(reflexName: string, spec: ToolSpec, binding: ToolBinding): void {
    const name =
      this.offered.has(spec.name) || own(BUILTIN_TOOLS, spec.name)
        ? toolName(`${reflexName}__${spec.name}`)
        : toolName(spec.name);
    if (this.offered.has(name)) return;
    this.offered.add(name);
    this.tools.push({ ...spec, name });
    setOwn(this.bindings, name, binding);
  }
}

/**
 * The toolset of a (non-completion) run: its reflexes' HTTP and MCP tools and integration tool
 * sets, the built-in tools its config and reflexes name, and one delegate tool per sub-neuron.
 */
export async function toolsetOf(d: RunDeps, scope: Scope, input: NeuronRunInput, cfg: NeuronConfig): Promise<Toolset> {
  const set = new Offer();
  const names = new Set(cfg.tools ?? []);
  /** The caller's token for an integration (null: not connected, or it could not be read now). */
  const tokenOf = (integrationId: string) =>
    d.connections
      .tokenFor({ workspaceId: scope.workspaceId, userId: scope.userId, apiKeyId: scope.apiKeyId }, integrationId)
      .catch(() => null);
  /** Whether a reflex's own server or HTTP tools may be called with the run's caller's connection to the integration. */
  const mayUseConnection = async (r: Reflex, integrationId: string) => {
    const i = await d.connections.integration(scope.workspaceId, integrationId);
    const why = i && connectionRefusal(integrationId, i, reflexSaver(r), scope.userId);
    if (why) d.log.warn({ reflexId: r._id, integrationId }, `reflex tools left out: ${why}`);
    return !why;
  };
  // The run's neuron was resolved in this scope (the invoke, the workflow's delegate, the pathway node).
  for (const r of await d.reflexes.forNeuron(scope, input.neuronId, { resolved: true })) {
    if (!r.isActive) continue;
    const meta = r.metadata ?? {};
    if (typeof meta.handler === 'string') names.add(meta.handler);
    await offerReflexTools(d, set, r, meta, tokenOf, mayUseConnection);
    // Integration-backed tool sets (`tools: [{ integration_id, tools }]`): the named tools of the
    // integration's MCP server (all of them when the set names none), called with the connection's token.
    for (const s of r.tools) await offerIntegrationSet(d, set, scope, r, s, tokenOf);
  }
  for (const n of names) {
    const builtin = own(BUILTIN_TOOLS, n);
    if (builtin && !set.offered.has(n)) {
      set.tools.push(builtin.spec);
      set.offered.add(n);
    }
  }
  if (input.depth < MAX_DELEGATION_DEPTH && cfg.sub_neuron_ids?.length) await offerDelegates(d, set, scope, cfg);
  return { tools: set.tools, delegates: set.delegates, bindings: set.bindings };
}

/** A tool one reflex offers, as GET /v1/reflexes/:id/tools shows it. */
export interface DiscoveredTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  kind: 'builtin' | 'http' | 'mcp';
  integration_id: string | null;
}

/**
 * The tools one reflex offers the caller, found the way a run finds them (the same listing, cache,
 * connection rule and naming), with what could not be listed. Tool names are as one reflex alone
 * would give them: on a neuron a name another reflex takes first is prefixed with this reflex's name.
 */
export async function reflexToolsOf(
  d: RunDeps,
  scope: Scope,
  r: Reflex,
): Promise<{ tools: DiscoveredTool[]; errors: string[] }> {
  const set = new Offer();
  const errors: string[] = [];
  const tokenOf = (integrationId: string) =>
    d.connections
      .tokenFor({ workspaceId: scope.workspaceId, userId: scope.userId, apiKeyId: scope.apiKeyId }, integrationId)
      .catch(() => null);
  const mayUseConnection = async (x: Reflex, integrationId: string) => {
    const i = await d.connections.integration(scope.workspaceId, integrationId);
    const why = i && connectionRefusal(integrationId, i, reflexSaver(x), scope.userId);
    if (why) errors.push(`metadata.integration_id: ${why}`);
    return !why;
  };
  const meta = r.metadata ?? {};
  const builtin = typeof meta.handler === 'string' ? own(BUILTIN_TOOLS, meta.handler) : undefined;
  if (typeof meta.handler === 'string' && !builtin)
    errors.push(`metadata.handler: ${meta.handler} is not a built-in tool`);
  await offerReflexTools(d, set, r, meta, tokenOf, mayUseConnection, errors);
  for (const s of r.tools) await offerIntegrationSet(d, set, scope, r, s, tokenOf, errors);
  const tools: DiscoveredTool[] = [];
  if (builtin)
    tools.push({ ...builtin.spec, parameters: { ...builtin.spec.parameters }, kind: 'builtin', integration_id: null });
  for (const t of set.tools) {
    const b = own(set.bindings, t.name);
    tools.push({
      name: t.name,
      description: t.description ?? '',
      parameters: { ...(t.parameters ?? {}) },
      kind: b?.kind === 'http' ? 'http' : 'mcp',
      integration_id: b?.integrationId ?? null,
    });
  }
  return { tools, errors };
}

/** A reflex's own tools: its HTTP tool definitions, and the tools its MCP server lists. */
async function offerReflexTools(
  d: RunDeps,
  set: Offer,
  r: Reflex,
  meta: Record<string, unknown>,
  tokenOf: (integrationId: string) => Promise<string | null>,
  mayUseConnection: (r: Reflex, integrationId: string) => Promise<boolean>,
  errors?: string[],
): Promise<void> {
  const integrationId = metadataIntegration(meta);
  // The token would go where the reflex's metadata says: only under its saver's privilege (a
  // workspace connection: an admin's; a person's own: theirs). Otherwise the reflex offers nothing.
  if (integrationId && !(await mayUseConnection(r, integrationId))) return;
  const auth = integrationId ? { integrationId } : {};
  const http = HttpToolDefs.safeParse(meta.http_tools ?? []);
  if (http.success)
    for (const def of http.data)
      set.offer(
        r.name,
        { name: def.name, description: def.description, parameters: def.parameters },
        { kind: 'http', reflexId: r._id, def, ...auth },
      );
  if (typeof meta.server_url === 'string') {
    const serverUrl = meta.server_url;
    // The tool list of a server behind a connection is read with the caller's token when there is one.
    const token = integrationId ? await tokenOf(integrationId) : null;
    // A server that cannot be listed leaves its tools out of this run (the run still starts).
    const listed = await d.remote
      .mcpTools(r._id, r.updatedAt.toISOString(), serverUrl, token ?? undefined)
      .catch((e: unknown) => {
        errors?.push(`metadata.server_url: the tool server could not be listed (${(e as Error).message})`);
        return [];
      });
    for (const t of listed) set.offer(r.name, t, { kind: 'mcp', reflexId: r._id, serverUrl, tool: t.name, ...auth });
  }
}

/** One integration tool set of a reflex: the tools its integration's MCP server lists (or names, to a user not connected). */
async function offerIntegrationSet(
  d: RunDeps,
  set: Offer,
  scope: Scope,
  r: Reflex,
  s: ReflexToolSet,
  tokenOf: (integrationId: string) => Promise<string | null>,
  errors?: string[],
): Promise<void> {
  const i = await d.connections.integration(scope.workspaceId, s.integrationId);
  // Not configured, or an integration without a tool server: there is nothing to run (GET …/connections/check says so).
  if (!i?.mcpServerUrl) {
    errors?.push(
      `${s.integrationId}: ${i ? 'the integration has no mcp_server_url' : 'the integration is not configured'}`,
    );
    return;
  }
  const serverUrl = i.mcpServerUrl;
  const token = await tokenOf(s.integrationId);
  const binding = (tool: string): ToolBinding => ({
    kind: 'mcp',
    reflexId: r._id,
    serverUrl,
    tool,
    integrationId: s.integrationId,
  });
  const listed = await d.remote
    .mcpTools(r._id, `${r.updatedAt.toISOString()}/${i.updatedAt.toISOString()}`, serverUrl, token ?? undefined)
    .catch((e: unknown) => {
      errors?.push(`${s.integrationId}: the tool server could not be listed (${(e as Error).message})`);
      return null;
    });
  if (listed) {
    for (const t of listed) if (!s.tools.length || s.tools.includes(t.name)) set.offer(r.name, t, binding(t.name));
  } else if (!token) {
    // A server that lists its tools only to a connected account: the set's tools are offered by
    // name, so that a call answers the model "not connected" and puts the connect link on the job stream.
    for (const name of s.tools) {
      set.offer(
        r.name,
        {
          name,
          description: `${name}, a tool of ${i.name} (needs the user's connected ${i.name} account)`,
          parameters: { type: 'object', properties: {}, additionalProperties: true },
        },
        binding(name),
      );
    }
  }
}

/** One delegate_<name> tool per sub-neuron the caller can see. */
async function offerDelegates(d: RunDeps, set: Offer, scope: Scope, cfg: NeuronConfig): Promise<void> {
  for (const sub of await d.neurons.findManyVisible(scope, cfg.sub_neuron_ids ?? [])) {
    const tool = toolName(`delegate_${sub.name}`);
    set.delegates.push({ tool, neuronId: sub._id, version: sub.version, name: sub.name });
    set.tools.push({
      name: tool,
      description: `Delegate a task to neuron ${sub.name}: ${sub.description || 'no description'}`,
      parameters: {
        type: 'object',
        properties: { message: { type: 'string', description: 'what the sub-neuron should do' } },
        required: ['message'],
      },
    });
  }
}
