/** The pathways area's door: what other areas, routes, activities and the worker may use. */
export type { CompileResult } from './compile.js';
export { PathwayGraphFormat } from './graph.js';
export { HTTP_NODE_MAX_RESPONSE_BYTES, HttpNodeFailure, createPathwayHttpService } from './http.js';
export type { HttpNodeCall } from './http.js';
export { ExecuteBody, JobCreateBody, JobInputBody, PathwayRefParams, ReplayBody, ResumeBody } from './run-schemas.js';
export { createPathwayRunService, evaluateExpression, mapItems, renderTemplate, renderTree } from './runs.js';
export type { MapItemsCall, PathwayRunService, SubPathwayCall } from './runs.js';
export {
  CheckRoleQuery,
  CheckRoleResult,
  Participant,
  ParticipantCreateBody,
  ParticipantIdParams,
  ParticipantUpdateBody,
  Pathway,
  PathwayCompilation,
  PathwayCompileBody,
  PathwayCreateBody,
  PathwayIdParams,
  PathwayList,
  PathwayListQuery,
  PathwayPromoteBody,
  PathwayUpdateBody,
  PathwayUserParams,
  PathwayValidateBody,
  PathwayValidation,
  PathwayVersion,
  PathwayVersionList,
  PathwayVersionParams,
} from './schemas.js';
export type { PathwayVersionSummary } from './schemas.js';
export { createPathwayService } from './service.js';
export type { PathwayPage, PathwayService, RoleCheck } from './service.js';
export { createPathwayRepo, pathwayIndexes } from './store.mongo.js';
export type {
  Pathway as PathwayRecord,
  PathwayHead,
  PathwayParticipantDoc,
  PathwayVersion as PathwayVersionRecord,
  PathwayVersionSummary as PathwayVersionSummaryRecord,
} from './model.js';
export type { PathwayStore as PathwayRepo, PathwayTrailStore as PathwayTrailRepo } from './store.js';
export { createPathwayTrailRepo } from './trails.mongo.js';
export type { ValidationResult } from './validate.js';
