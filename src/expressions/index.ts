/** The expressions area's door: what other areas, routes, activities and the worker may use. */
export {
  connectionRefusal,
  credentialInOrigin,
  hostAllowed,
  httpNodesOf,
  httpTemplates,
  leaves,
  referencedNames,
  secretRefusal,
  splitOrigin,
} from './credentials.js';
export type { ConnectionUse, GraphSaver, SecretUsePolicy } from './credentials.js';
export { evaluateTimeboxed, nodeExpressionErrors, normalizeNodeData } from './engine.js';
export { templateParts } from './normalize.js';
export { RegexRefused, compileLinear } from './regex.js';
