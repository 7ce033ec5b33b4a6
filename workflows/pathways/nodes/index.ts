import { classifyNode } from './classify.js';
import { delayNode, whileNode } from './flow.js';
import type { NodeHandler } from './handler.js';
import { httpNode } from './http.js';
import { humanNode } from './human.js';
import { joinNode } from './join.js';
import { mapNode } from './map.js';
import { neuronNode } from './neuron.js';
import { pathwayNode } from './pathway.js';
import { endNode, ifNode, outputNode, startNode, transformNode } from './values.js';

export type { NodeExpression, NodeHandler, NodeOutcome, RunNode } from './handler.js';

/**
 * Every node type the interpreter runs, by the graph's type name. A new node type is a handler
 * (its own file in this folder) and its line here; the loop in workflows/pathways/pathway-run.ts does not change.
 */
const handlers: Record<string, NodeHandler> = {
  start: startNode,
  input: startNode,
  transform: transformNode,
  if: ifNode,
  while: whileNode,
  delay: delayNode,
  neuron: neuronNode,
  classify: classifyNode,
  human: humanNode,
  map: mapNode,
  pathway: pathwayNode,
  http: httpNode,
  output: outputNode,
  end: endNode,
  join: joinNode,
};

/** The handler of a node type, or undefined for a type the interpreter does not know. */
export const handlerFor = (type: string): NodeHandler | undefined =>
  Object.hasOwn(handlers, type) ? handlers[type] : undefined;
