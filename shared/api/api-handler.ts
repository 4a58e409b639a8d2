/**
 * The HTTP API: API Gateway HTTP API events (payload format 2.0) in, JSON or problem+json out. Routes
 * by method and path itself, so it answers the same behind explicit routes, a $default route or the
 * local stack's server. Bad input is a 4xx that names what to fix, and writes nothing.
 */
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from 'aws-lambda';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { OutcomeFlusher, TaskCommands, TaskReads, TypeControls } from '../store/ports.js';
import type { TaskSubmitter } from '../tasks/task-submitter.js';
import type { LeaseholdConfig } from '../config.js';
import { callerOwner } from './caller.js';
import { json, problem, type ApiResponse } from './http.js';
import {
  batchBody,
  firesQuery,
  listQuery,
  MAX_BODY_BYTES,
  schedulesQuery,
  STATS_WINDOW_MINUTES,
  statsQuery,
} from './request-schemas.js';
import { logOutcomeFlush } from '../stats/outcome-recorder.js';
import { statsJson } from './stats-json.js';
import { fireJson, scheduleJson } from '../schedules/schedule-model.js';
import type { ScheduleService } from '../schedules/schedule-service.js';
import { taskJson } from './task-json.js';
import { childrenJson, stepsJson } from './children-steps-json.js';
import { errorResponse } from './error-response.js';
import { enqueueRequest } from './enqueue-request.js';
import { enqueueBatch } from './batch-enqueue.js';
import { flowRequest } from './flow-request.js';
import { parseRequest } from './parse-request.js';
import { listTypes, setPaused } from './type-routes.js';

/**
 * What the API uses: reads and commands on tasks (and the outcome counters' flush: a cancel ends a
 * queued task), the checked enqueue, and schedules.
 */
export interface ApiDeps {
  store: Pick<TaskReads, 'get' | 'list' | 'stats'> &
    Required<Pick<TaskReads, 'children' | 'steps'>> &
    Pick<TaskCommands, 'requestCancel' | 'retry'> &
    OutcomeFlusher &
    TypeControls;
  submitter: TaskSubmitter;
  schedules: ScheduleService;
  config: Pick<LeaseholdConfig, 'maxExecutionMs' | 'pollIntervalMs'>;
  logger: Logger;
  /**
   * The OpenAPI document GET /openapi.json answers: the Lambda reads the file the construct generated
   * (openapi-file.ts), the local stack generates it (openapi.ts). Without it the route answers 404.
   */
  openApi?: () => unknown;
}

export type ApiEvent = Pick<
  APIGatewayProxyEventV2WithIAMAuthorizer,
  'rawPath' | 'headers' | 'body' | 'isBase64Encoded' | 'queryStringParameters' | 'requestContext'
>;

interface Route {
  method: string;
  /** The route as API Gateway names it (the CDK stack creates one route per entry). */
  path: string;
  /** An operator's route (it changes every caller's tasks): granted apart from enqueue and read. */
  operator?: true;
  pattern: RegExp;
  handle: (ctx: RequestContext, params: string[]) => Promise<ApiResponse>;
}

interface RequestContext {
  event: ApiEvent;
  owner: string;
  deps: ApiDeps;
}

const routes: Route[] = [
  { method: 'GET', path: '/health', pattern: /^\/health$/, handle: async () => json(200, { status: 'ok' }) },
  {
    method: 'GET',
    path: '/openapi.json',
    pattern: /^\/openapi\.json$/,
    handle: async (ctx) =>
      ctx.deps.openApi
        ? json(200, ctx.deps.openApi())
        : problem(
            404,
            'OPENAPI_NOT_SERVED',
            'This server does not serve the OpenAPI document; see docs/openapi.json.',
          ),
  },
  { method: 'POST', path: '/tasks', pattern: /^\/tasks$/, handle: (ctx) => createTask(ctx) },
  // Only POST: GET /tasks/batch is GET /tasks/{id} of a task id "batch" (not found), as API Gateway routes it too.
  { method: 'POST', path: '/tasks/batch', pattern: /^\/tasks\/batch$/, handle: (ctx) => createTasks(ctx) },
  { method: 'POST', path: '/flows', pattern: /^\/flows$/, handle: (ctx) => createFlow(ctx) },
  { method: 'GET', path: '/tasks', pattern: /^\/tasks$/, handle: (ctx) => listTasks(ctx) },
  {
    method: 'GET',
    path: '/tasks/{id}',
    pattern: /^\/tasks\/([^/]+)$/,
    handle: async (ctx, [id]) =>
      json(200, { task: taskJson(await ctx.deps.store.get({ id: id!, owner: ctx.owner })) }),
  },
  {
    method: 'GET',
    path: '/tasks/{id}/children',
    pattern: /^\/tasks\/([^/]+)\/children$/,
    handle: async (ctx, [id]) =>
      json(200, childrenJson(await ctx.deps.store.children({ id: id!, owner: ctx.owner }))),
  },
  {
    method: 'GET',
    path: '/tasks/{id}/steps',
    pattern: /^\/tasks\/([^/]+)\/steps$/,
    handle: async (ctx, [id]) =>
      json(200, stepsJson(await ctx.deps.store.steps({ id: id!, owner: ctx.owner }))),
  },
  {
    method: 'POST',
    path: '/tasks/{id}/cancel',
    pattern: /^\/tasks\/([^/]+)\/cancel$/,
    handle: (ctx, [id]) => cancelTask(ctx, id!),
  },
  {
    method: 'POST',
    path: '/tasks/{id}/retry',
    pattern: /^\/tasks\/([^/]+)\/retry$/,
    handle: async (ctx, [id]) =>
      json(200, { task: taskJson(await ctx.deps.store.retry({ id: id!, owner: ctx.owner })) }),
  },
  { method: 'GET', path: '/stats', pattern: /^\/stats$/, handle: (ctx) => readStats(ctx) },
  { method: 'GET', path: '/types', pattern: /^\/types$/, handle: (ctx) => listTypes(typeDeps(ctx)) },
  {
    method: 'POST',
    path: '/types/{type}/pause',
    pattern: /^\/types\/([^/]+)\/pause$/,
    operator: true,
    handle: (ctx, [type]) => setPaused(typeDeps(ctx), type!, true, ctx.owner),
  },
  {
    method: 'POST',
    path: '/types/{type}/resume',
    pattern: /^\/types\/([^/]+)\/resume$/,
    operator: true,
    handle: (ctx, [type]) => setPaused(typeDeps(ctx), type!, false, ctx.owner),
  },
  { method: 'GET', path: '/schedules', pattern: /^\/schedules$/, handle: (ctx) => listSchedules(ctx) },
  {
    method: 'PUT',
    path: '/schedules/{name}',
    pattern: /^\/schedules\/([^/]+)$/,
    handle: (ctx, [name]) => putSchedule(ctx, name!),
  },
  {
    method: 'GET',
    path: '/schedules/{name}',
    pattern: /^\/schedules\/([^/]+)$/,
    handle: (ctx, [name]) => getSchedule(ctx, name!),
  },
  {
    method: 'DELETE',
    path: '/schedules/{name}',
    pattern: /^\/schedules\/([^/]+)$/,
    handle: (ctx, [name]) => deleteSchedule(ctx, name!),
  },
  {
    method: 'GET',
    path: '/schedules/{name}/fires',
    pattern: /^\/schedules\/([^/]+)\/fires$/,
    handle: (ctx, [name]) => listFires(ctx, name!),
  },
];

/** Every route of the API, for the infrastructure; `operator` marks the routes granted apart (grantOperate). */
export const API_ROUTES: readonly { method: string; path: string; operator?: true }[] = routes.map(
  ({ method, path, operator }) => ({ method, path, ...(operator ? { operator } : {}) }),
);

export async function handleApiEvent(event: ApiEvent, deps: ApiDeps): Promise<ApiResponse> {
  try {
    const method = event.requestContext?.http?.method?.toUpperCase() ?? 'GET';
    const path = routePath(event);
    const matching = routes.filter((r) => r.pattern.test(path));
    if (matching.length === 0)
      return problem(
        404,
        'ROUTE_NOT_FOUND',
        `No route ${path}. Routes: ${API_ROUTES.map((r) => `${r.method} ${r.path}`).join(', ')}.`,
      );
    const route = matching.find((r) => r.method === method);
    if (!route) {
      const allow = matching.map((r) => r.method).join(', ');
      return problem(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; use ${allow}.`, {
        headers: { allow },
      });
    }
    // Neither names an owner's data: in AWS IAM still guards them (every route has the authorizer).
    if (path === '/health' || path === '/openapi.json')
      return await route.handle({ event, owner: '', deps }, []);
    const owner = callerOwner(event);
    if (!owner)
      return problem(
        401,
        'NO_CALLER_IDENTITY',
        'The request carries no IAM caller identity; sign it with SigV4 (the API uses IAM authorization).',
      );
    const params = route.pattern
      .exec(path)!
      .slice(1)
      .map((p) => safeDecode(p));
    return await route.handle({ event, owner, deps }, params);
  } catch (error) {
    return errorResponse(error, deps.logger);
  }
}

function routePath(event: ApiEvent): string {
  let path = event.rawPath || '/';
  const stage = event.requestContext?.stage;
  // A named stage appears as the first path segment; $default does not.
  if (stage && stage !== '$default' && (path === `/${stage}` || path.startsWith(`/${stage}/`)))
    path = path.slice(stage.length + 1) || '/';
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const typeDeps = (ctx: RequestContext) => ({
  store: ctx.deps.store,
  typeNames: () => ctx.deps.submitter.registry.names(),
  pollIntervalMs: ctx.deps.config.pollIntervalMs,
});

async function createTask(ctx: RequestContext): Promise<ApiResponse> {
  const body = readJsonBody(ctx.event);
  if ('response' in body) return body.response;
  const result = await ctx.deps.submitter.enqueue(enqueueRequest(body.value, ctx.owner, ctx.deps.config));
  return json(
    result.created ? 201 : 200,
    { task: taskJson(result.task), ...(result.joined ? { joined: true } : {}) },
    result.created ? { location: `/tasks/${result.task.id}` } : {},
  );
}

/** A bad envelope is the usual 4xx with nothing written; once it is read, the answer is 200 with one result per task. */
async function createTasks(ctx: RequestContext): Promise<ApiResponse> {
  const body = readJsonBody(ctx.event);
  if ('response' in body) return body.response;
  const { tasks } = parseRequest(batchBody, body.value, 'body');
  return json(200, await enqueueBatch(tasks, ctx.owner, ctx.deps));
}

/** A flow: every task checked before any is written (flow-request.ts, then the submitter); 201, or 200 for a repeat of its key. */
async function createFlow(ctx: RequestContext): Promise<ApiResponse> {
  const body = readJsonBody(ctx.event);
  if ('response' in body) return body.response;
  const { task, ids, created } = await ctx.deps.submitter.enqueueFlow(
    flowRequest(body.value, ctx.owner, ctx.deps.config),
  );
  return json(
    created ? 201 : 200,
    { id: task.id, ids, task: taskJson(task) },
    created ? { location: `/tasks/${task.id}` } : {},
  );
}

async function listTasks(ctx: RequestContext): Promise<ApiResponse> {
  const query = parseRequest(listQuery, ctx.event.queryStringParameters ?? {}, 'query');
  const page = await ctx.deps.store.list({
    owner: ctx.owner,
    ...(query.status ? { status: query.status } : {}),
    ...(query.type ? { type: query.type } : {}),
    ...(query.limit ? { limit: query.limit } : {}),
    ...(query.cursor ? { cursor: query.cursor } : {}),
  });
  return json(200, {
    tasks: page.tasks.map(taskJson),
    ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
  });
}

/** A queued task ends here (CANCELLED at once): its outcome is written before the answer, as Lambda may freeze after it. */
async function cancelTask(ctx: RequestContext, id: string): Promise<ApiResponse> {
  const task = await ctx.deps.store.requestCancel({ id, owner: ctx.owner });
  logOutcomeFlush(ctx.deps.logger, await ctx.deps.store.flushOutcomes());
  return json(200, { task: taskJson(task) });
}

async function readStats(ctx: RequestContext): Promise<ApiResponse> {
  const { since } = parseRequest(statsQuery, ctx.event.queryStringParameters ?? {}, 'query');
  const stats = await ctx.deps.store.stats({
    owner: ctx.owner,
    // Any time before the window reads the whole window (a year 0000 is before 1970).
    ...(since === undefined ? {} : { since: Math.max(0, Date.parse(since)) }),
    windowMinutes: STATS_WINDOW_MINUTES,
  });
  return json(200, statsJson(stats));
}

async function putSchedule(ctx: RequestContext, name: string): Promise<ApiResponse> {
  const body = readJsonBody(ctx.event);
  if ('response' in body) return body.response;
  const { schedule, created } = await ctx.deps.schedules.put(name, ctx.owner, body.value);
  return json(created ? 201 : 200, {
    schedule: scheduleJson(schedule, ctx.deps.schedules.nextFire(schedule)),
  });
}

async function getSchedule(ctx: RequestContext, name: string): Promise<ApiResponse> {
  const schedule = await ctx.deps.schedules.get(name, ctx.owner);
  const latest = await ctx.deps.schedules.latestFire(schedule);
  return json(200, { schedule: scheduleJson(schedule, ctx.deps.schedules.nextFire(schedule, latest)) });
}

async function listSchedules(ctx: RequestContext): Promise<ApiResponse> {
  const query = parseRequest(schedulesQuery, ctx.event.queryStringParameters ?? {}, 'query');
  const page = await ctx.deps.schedules.list(ctx.owner, query);
  return json(200, {
    schedules: page.schedules.map((s) => scheduleJson(s, ctx.deps.schedules.nextFire(s))),
    ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
  });
}

async function deleteSchedule(ctx: RequestContext, name: string): Promise<ApiResponse> {
  await ctx.deps.schedules.delete(name, ctx.owner);
  return { statusCode: 204, headers: {}, body: '' };
}

async function listFires(ctx: RequestContext, name: string): Promise<ApiResponse> {
  const { limit } = parseRequest(firesQuery, ctx.event.queryStringParameters ?? {}, 'query');
  const { fires, missed } = await ctx.deps.schedules.fires(name, ctx.owner, limit);
  return json(200, { fires: fires.map(fireJson), missed: missed.map((t) => new Date(t).toISOString()) });
}

function readJsonBody(event: ApiEvent): { value: unknown } | { response: ApiResponse } {
  const contentType = (headerOf(event, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!/^application\/([\w.-]+\+)?json$/.test(contentType)) {
    return {
      response: problem(
        415,
        'UNSUPPORTED_MEDIA_TYPE',
        `Send the body as JSON with "Content-Type: application/json"${contentType ? ` (got "${contentType}")` : ''}.`,
      ),
    };
  }
  const raw = event.body ?? '';
  const bytes = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  if (bytes.length > MAX_BODY_BYTES) {
    return {
      response: problem(
        413,
        'BODY_TOO_LARGE',
        `The body is ${bytes.length} bytes; the limit is ${MAX_BODY_BYTES}. Keep large data elsewhere (e.g. S3) and pass a reference.`,
      ),
    };
  }
  try {
    return { value: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch (error) {
    return {
      response: problem(400, 'INVALID_JSON', `The body is not valid JSON: ${(error as Error).message}.`),
    };
  }
}

function headerOf(event: ApiEvent, name: string): string | undefined {
  const headers = event.headers ?? {};
  return headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
}
