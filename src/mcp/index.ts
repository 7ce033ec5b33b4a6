/** The mcp area's door: what other areas, routes, activities and the worker may use. */
export { createMcpTools } from './tools.js';
export type { McpToolDef, ToolOutcome } from './tools.js';
