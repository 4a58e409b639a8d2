/**
 * The operators' routes on task types: GET /types (each type, paused or not, with its waiting, running
 * and delayed counts), POST /types/{type}/pause and /resume. Pause and resume change what every
 * caller's tasks of the type do, so in AWS they need their own grant (the construct's grantOperate);
 * the enqueue and read grants do not include them.
 */
import { TaskTypeNotFoundError } from '../errors.js';
import type { TypeControls } from '../store/ports.js';
import type { TypeControl } from '../store/type-controls.js';
import type { TypesOverview } from '../stats/type-overview.js';
import { json, type ApiResponse } from './http.js';
import type { TypeControlAnswerJson, TypesJson } from './response-schemas.js';

export interface TypeRouteDeps {
  store: TypeControls;
  /** The deployment's task types (the registry's names). */
  typeNames: () => string[];
  /** How far apart workers read the pauses: rounds they begin after their next read leave a paused type out. */
  pollIntervalMs: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function typesOverviewJson(overview: TypesOverview): TypesJson {
  return {
    types: overview.types.map(({ changedAt, ...rest }) => ({
      ...rest,
      ...(changedAt === undefined ? {} : { changedAt: iso(changedAt) }),
    })),
    ...(overview.waitingAt === undefined ? {} : { waitingAt: iso(overview.waitingAt) }),
    estimated: overview.estimated,
  };
}

export function typeControlJson(control: TypeControl): TypeControlAnswerJson['type'] {
  return {
    type: control.type,
    paused: control.paused,
    changedAt: iso(control.changedAt),
    ...(control.changedBy ? { changedBy: control.changedBy } : {}),
  };
}

export async function listTypes(deps: TypeRouteDeps): Promise<ApiResponse> {
  return json(200, typesOverviewJson(await deps.store.typesOverview(deps.typeNames())));
}

/** Pauses (`paused` true) or resumes a type; an unknown type is a 404 that lists the known ones, with nothing written. */
export async function setPaused(
  deps: TypeRouteDeps,
  type: string,
  paused: boolean,
  by: string,
): Promise<ApiResponse> {
  const known = deps.typeNames();
  if (!known.includes(type)) throw new TaskTypeNotFoundError(type, known);
  const control = await deps.store.setTypePaused({ type, paused, ...(by ? { by } : {}) });
  return json(200, { type: typeControlJson(control), takesEffectWithinMs: deps.pollIntervalMs });
}
