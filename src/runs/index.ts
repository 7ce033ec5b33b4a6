/** The runs area's door: what other areas, routes, activities and the worker may use. */
export { createFirstTurns } from './first-turns.js';
export { ChatCompletion, ChatCompletionBody, OpenAIErrorBody, OpenAIModelList } from './openai-schemas.js';
export type { ChatMessage, OpenAIUsage } from './openai-schemas.js';
export { DEFAULT_MAX_TURNS, createRunService, supersedeSoon } from './service.js';
export type { FinishInput, ModelTurnInput, RunService } from './service.js';
export { fromRunScope, toRunScope } from './shared.js';
export type { ModelTurnInput as ModelTurnInputRecord } from './shared.js';
export { createRunRepo, runIndexes } from './store.mongo.js';
export type { ToolApprovalSpec } from './tool-approval.js';
