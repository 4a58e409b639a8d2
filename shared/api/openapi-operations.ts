/**
 * What each route of the HTTP API takes and answers, in words and by schema name: the part of the
 * OpenAPI document that zod cannot say. The schemas themselves are the zod ones the API validates with
 * and builds its answers to; openapi.ts turns both into the document, and refuses a route of the API
 * that has no entry here (or an entry that is no route).
 */
import * as z from 'zod';
import { RUNNING_READ_LIMIT } from '../stats/running-tasks.js';
import { MAX_CHILDREN, MAX_FLOW_DEPTH, MAX_FLOW_TASKS } from '../flow-rules.js';
import { taskIdSchema, taskTypeSchema } from '../task-inputs.js';
import { scheduleBody, scheduleNameSchema } from '../schedules/schedule-model.js';
import {
  batchBody,
  enqueueBody,
  flowBody,
  flowChildBody,
  flowChildFlowBody,
  flowChildTaskBody,
  flowTaskBody,
  firesQuery,
  listQuery,
  schedulesQuery,
  STATS_WINDOW_MINUTES,
  statsQuery,
} from './request-schemas.js';
import {
  batchAnswerSchema,
  batchItemResultSchema,
  childJsonSchema,
  childrenAnswerSchema,
  fireJsonSchema,
  firesAnswerSchema,
  flowAnswerSchema,
  flowIdsSchema,
  gatewayMessageSchema,
  healthAnswerSchema,
  outcomeCountsSchema,
  outcomeMinuteSchema,
  problemSchema,
  queueTypeSchema,
  scheduleAnswerSchema,
  scheduleJsonSchema,
  schedulePageSchema,
  statsAnswerSchema,
  stepJsonSchema,
  stepsAnswerSchema,
  taskAnswerSchema,
  taskJsonSchema,
  taskPageSchema,
  typeControlAnswerSchema,
  typeControlSchema,
  typeOverviewSchema,
  typesAnswerSchema,
} from './response-schemas.js';

/** Request bodies, as the API parses them (JSON Schema of the zod input). */
export const REQUEST_COMPONENTS = {
  EnqueueRequest: enqueueBody,
  BatchRequest: batchBody,
  FlowRequest: flowBody,
  FlowTask: flowTaskBody,
  FlowChild: flowChildBody,
  FlowChildTask: flowChildTaskBody,
  FlowChildFlow: flowChildFlowBody,
  ScheduleRequest: scheduleBody,
} satisfies Record<string, z.ZodType>;

/**
 * The document's own answer. It is the one schema written here: the document describes itself, and
 * only its outline is worth checking (the validator test checks the rest against the OpenAPI schema).
 */
export const openApiAnswerSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.looseObject({ schemas: z.record(z.string(), z.unknown()) }),
});

/** Answers, as the API builds them (JSON Schema of the zod output: no member the schema lacks). */
export const ANSWER_COMPONENTS = {
  Task: taskJsonSchema,
  TaskAnswer: taskAnswerSchema,
  TaskPage: taskPageSchema,
  BatchItemResult: batchItemResultSchema,
  BatchAnswer: batchAnswerSchema,
  FlowIds: flowIdsSchema,
  FlowAnswer: flowAnswerSchema,
  Child: childJsonSchema,
  ChildrenAnswer: childrenAnswerSchema,
  Step: stepJsonSchema,
  StepsAnswer: stepsAnswerSchema,
  Schedule: scheduleJsonSchema,
  ScheduleAnswer: scheduleAnswerSchema,
  SchedulePage: schedulePageSchema,
  Fire: fireJsonSchema,
  FiresAnswer: firesAnswerSchema,
  Stats: statsAnswerSchema,
  TypeOverview: typeOverviewSchema,
  TypesAnswer: typesAnswerSchema,
  TypeControl: typeControlSchema,
  TypeControlAnswer: typeControlAnswerSchema,
  QueueType: queueTypeSchema,
  OutcomeMinute: outcomeMinuteSchema,
  OutcomeCounts: outcomeCountsSchema,
  HealthAnswer: healthAnswerSchema,
  OpenApiDocument: openApiAnswerSchema,
  Problem: problemSchema,
  GatewayMessage: gatewayMessageSchema,
} satisfies Record<string, z.ZodType>;

export type RequestComponent = keyof typeof REQUEST_COMPONENTS;
export type AnswerComponent = keyof typeof ANSWER_COMPONENTS;

/** Every `{name}` a route path has, with the schema the API checks it against. */
export const PATH_PARAMETERS: Record<string, { schema: z.ZodType; description: string }> = {
  id: { schema: taskIdSchema, description: 'The task id, as `task.id` of the answer that created it.' },
  name: { schema: scheduleNameSchema, description: 'The schedule name, chosen by the caller.' },
  type: {
    schema: taskTypeSchema,
    description: 'A task type this deployment defines (GET /types lists them).',
  },
};

export interface SuccessAnswer {
  status: 200 | 201 | 204;
  description: string;
  /** Absent for an answer without a body (204). */
  schema?: AnswerComponent;
  /** Headers the answer always carries. */
  headers?: Record<string, string>;
}

export interface OperationSpec {
  operationId: string;
  summary: string;
  description?: string;
  tag: 'tasks' | 'types' | 'schedules' | 'service';
  query?: z.ZodObject;
  body?: RequestComponent;
  answers: SuccessAnswer[];
  /** problem+json answers of the function, by status, with what each means here. */
  problems: Partial<Record<400 | 404 | 409 | 413 | 415 | 503, string>>;
  /** false: the function answers without looking at the caller (API Gateway still checks the signature). */
  callerScoped?: false;
}

const INVALID_BODY = 'Invalid JSON, or fields to fix (INVALID_JSON, VALIDATION_FAILED): `errors` names each.';
const BAD_ID = 'The id is not a task id (VALIDATION_FAILED).';
const NO_TASK = 'No such task for this caller (TASK_NOT_FOUND): another caller’s task is not found either.';
const NO_SCHEDULE = 'No such schedule for this caller (SCHEDULE_NOT_FOUND).';
const NO_TYPE = 'No such task type here (TYPE_NOT_FOUND): `detail` lists the types; nothing was written.';
const BODY_TOO_LARGE = 'The body is over 256 KB (BODY_TOO_LARGE).';
const NOT_JSON = 'The body is not sent as JSON (UNSUPPORTED_MEDIA_TYPE).';
const BAD_QUERY = 'A query parameter to fix (VALIDATION_FAILED), or a cursor that is not this list’s.';
const NOT_SYNCED =
  'EventBridge Scheduler did not take the change (SCHEDULE_NOT_SYNCED): send the same request again after `retry-after` seconds.';
const taskAnswer = (description: string): SuccessAnswer => ({
  status: 200,
  description,
  schema: 'TaskAnswer',
});

/** One entry per route of the API, keyed `METHOD /path` as API_ROUTES names it. */
export const OPERATIONS: Record<string, OperationSpec> = {
  'GET /health': {
    operationId: 'getHealth',
    summary: 'Check that the API answers',
    tag: 'service',
    answers: [{ status: 200, description: 'The API is up.', schema: 'HealthAnswer' }],
    problems: {},
    callerScoped: false,
  },
  'GET /openapi.json': {
    operationId: 'getOpenApiDocument',
    summary: 'This document',
    tag: 'service',
    answers: [
      { status: 200, description: 'The OpenAPI 3.1 document of the API.', schema: 'OpenApiDocument' },
    ],
    problems: {},
    callerScoped: false,
  },
  'POST /tasks': {
    operationId: 'createTask',
    summary: 'Enqueue a task',
    description:
      'Give `delaySeconds` or `runAt`, not both. The same `idempotencyKey` with the same body answers ' +
      'the first task again (200); with another body it is a 409. A `group` (1-128 printable ASCII ' +
      'characters, no spaces, named within the caller) runs at most the type’s `groupConcurrency` of its ' +
      'tasks at once (default 1: one at a time, in claim order); a deep group never delays other groups. ' +
      'With `debounce: {key, windowMs}`, enqueues of one key (per caller and type) collapse into one task, ' +
      'due `windowMs` after the last, with the last payload: one that joins the waiting task answers 200 ' +
      'with `joined: true`; once that task has started, the next makes a new one (201).',
    tag: 'tasks',
    body: 'EnqueueRequest',
    answers: [
      {
        status: 201,
        description: 'The task was created.',
        schema: 'TaskAnswer',
        headers: { location: 'The task’s URL path, `/tasks/{id}`.' },
      },
      taskAnswer(
        'The idempotency key was used before with the same body: the first task. Or, with `debounce`, the waiting task of the key this enqueue joined (`joined: true`).',
      ),
    ],
    problems: {
      400: `${INVALID_BODY} Also an unknown task type, a payload its type refuses, or a timeout over the maximum.`,
      409: 'The idempotency key was used for a different body (IDEMPOTENCY_CONFLICT); `taskId` names the first task.',
      413: BODY_TOO_LARGE,
      415: NOT_JSON,
    },
  },
  'POST /tasks/batch': {
    operationId: 'enqueueBatch',
    summary: 'Enqueue up to 100 tasks',
    description:
      'Each item is the body of POST /tasks and is answered on its own in `results`, in the order sent: ' +
      'one refused item does not stop the others.',
    tag: 'tasks',
    body: 'BatchRequest',
    answers: [{ status: 200, description: 'One result per task sent.', schema: 'BatchAnswer' }],
    problems: {
      400: 'Invalid JSON, or an envelope to fix (VALIDATION_FAILED): `tasks` missing, empty or over 100.',
      413: BODY_TOO_LARGE,
      415: NOT_JSON,
    },
  },
  'POST /flows': {
    operationId: 'createFlow',
    summary: 'Enqueue a flow: a root task and its children, each a task or a flow of its own',
    description:
      'Each child is a task (`{type, payload, ...}`) or a flow (`{task, children}`: a child with a `task` ' +
      'member is a flow). Its tasks take the fields of POST /tasks but no `delaySeconds`, `runAt`, ' +
      '`debounce` or `idempotencyKey`; a child may be `optional` (its FAILED or CANCELLED end does not ' +
      'fail its parent). A parent waits in WAITING_CHILDREN until its children have ended, then runs ' +
      '(or fails, when a child that is not optional failed); the children are QUEUED at once. At most ' +
      `${MAX_FLOW_DEPTH} levels of children and ${MAX_FLOW_TASKS} tasks below the root. Every task ` +
      'is checked (its type, its payload against the type’s schema, its timeout) before any is ' +
      'written. The same `idempotencyKey` with the same body answers the first flow again (200), with ' +
      'the same ids; with another body it is a 409.',
    tag: 'tasks',
    body: 'FlowRequest',
    answers: [
      {
        status: 201,
        description:
          'The flow was created: the root task’s id, every task’s id in the shape sent, the root task.',
        schema: 'FlowAnswer',
        headers: { location: 'The root task’s URL path, `/tasks/{id}`.' },
      },
      {
        status: 200,
        description:
          'The idempotency key was used before with the same body: the first flow, its ids the same.',
        schema: 'FlowAnswer',
      },
    ],
    problems: {
      400: `${INVALID_BODY} Also a flow over the limits (the message says which), an unknown task type, a payload its type refuses, or a timeout over the maximum; each field named by its path, e.g. \`children.3.task.payload.n\`.`,
      409: 'The idempotency key was used for a different flow (IDEMPOTENCY_CONFLICT); `taskId` names the first flow’s root task.',
      413: BODY_TOO_LARGE,
      415: NOT_JSON,
    },
  },
  'GET /tasks': {
    operationId: 'listTasks',
    summary: 'List the caller’s tasks, newest first',
    description:
      'Follow `nextCursor` until it is absent. Lists leave out payloads and results (read one task for those).',
    tag: 'tasks',
    query: listQuery,
    answers: [{ status: 200, description: 'A page of tasks.', schema: 'TaskPage' }],
    problems: { 400: BAD_QUERY },
  },
  'GET /tasks/{id}': {
    operationId: 'getTask',
    summary: 'Read one task, with its payload, result and whole error',
    tag: 'tasks',
    answers: [taskAnswer('The task.')],
    problems: { 400: BAD_ID, 404: NO_TASK },
  },
  'GET /tasks/{id}/children': {
    operationId: 'getTaskChildren',
    summary: 'Read a parent’s children: each one’s status, and its result or error once it has ended',
    description:
      'The children of a flow’s task (POST /flows, or `ctx.enqueueChildren` in its handler), in the order ' +
      `they were enqueued, ${MAX_CHILDREN} at most (a parent’s limit); a task without children answers ` +
      'an empty list; a child not written (yet) is left out. Results are left out past 5 MB of answer ' +
      '(`resultOmitted`): read such a child with GET /tasks/{id}.',
    tag: 'tasks',
    answers: [{ status: 200, description: 'The children.', schema: 'ChildrenAnswer' }],
    problems: { 400: BAD_ID, 404: NO_TASK },
  },
  'GET /tasks/{id}/steps': {
    operationId: 'getTaskSteps',
    summary: 'Read the durable steps a task stored (ctx.step), oldest first',
    description:
      'Each step’s name, its result as the step function returned it, the fencing token of the attempt ' +
      'that stored it and when. A later attempt replays these instead of running them again. Only this ' +
      'task’s: a task of the same id enqueued again after the first expired starts with none. Results ' +
      'are left out past 5 MB of answer (`resultOmitted`).',
    tag: 'tasks',
    answers: [{ status: 200, description: 'The stored steps.', schema: 'StepsAnswer' }],
    problems: { 400: BAD_ID, 404: NO_TASK },
  },
  'POST /tasks/{id}/cancel': {
    operationId: 'cancelTask',
    summary: 'Cancel a task',
    description:
      'A queued task is CANCELLED at once; a running one is CANCEL_REQUESTED until its worker stops.',
    tag: 'tasks',
    answers: [taskAnswer('The task, CANCELLED or CANCEL_REQUESTED.')],
    problems: {
      400: BAD_ID,
      404: NO_TASK,
      409: 'The task has finished (TASK_STATE_CONFLICT); `taskStatus` says how.',
    },
  },
  'POST /tasks/{id}/retry': {
    operationId: 'retryTask',
    summary: 'Queue a FAILED or CANCELLED task again, with a fresh attempt budget',
    tag: 'tasks',
    answers: [taskAnswer('The task, QUEUED.')],
    problems: {
      400: BAD_ID,
      404: NO_TASK,
      409: 'The task is not FAILED or CANCELLED (TASK_STATE_CONFLICT); `taskStatus` says what it is. Or its payload is gone, so it cannot run again (PAYLOAD_MISSING): enqueue a new task.',
    },
  },
  'GET /stats': {
    operationId: 'getStats',
    summary: 'What a dashboard shows: the queue, the caller’s running tasks and outcomes per minute',
    description:
      '`queue` is the whole queue (every owner’s tasks) as recovery last gauged it, once a minute; ' +
      '`running` and `minutes` are the caller’s. `running` looks at the leases expiring soonest, ' +
      `${RUNNING_READ_LIMIT} at most (every owner’s): with more in the queue, \`runningComplete\` is ` +
      'false and some of the caller’s may be missing. ' +
      `\`minutes\` covers \`since\` (its minute included) to now, at most the last ${STATS_WINDOW_MINUTES} ` +
      'minutes; a minute in which nothing ended is left out. One request costs the same whatever the ' +
      'number of tasks.',
    tag: 'tasks',
    query: statsQuery,
    answers: [{ status: 200, description: 'The figures.', schema: 'Stats' }],
    problems: {
      400: 'A query parameter to fix (VALIDATION_FAILED): `since` is not an ISO-8601 date-time with a zone.',
    },
  },
  'GET /types': {
    operationId: 'listTypes',
    summary: 'Each task type: paused or not, and its waiting, running and delayed tasks',
    description:
      'Every owner’s tasks. `waiting` is recovery’s once-a-minute gauge (as of `waitingAt`); `running` ' +
      'and `delayed` read the first keys of each lease and delay partition, exact while they fit in one ' +
      'read and scaled from that sample beyond (`estimated`). One request costs the same whatever the ' +
      'number of tasks.',
    tag: 'types',
    callerScoped: false,
    answers: [{ status: 200, description: 'The types.', schema: 'TypesAnswer' }],
    problems: {},
  },
  'POST /types/{type}/pause': {
    operationId: 'pauseType',
    summary: 'Pause a task type: its tasks are enqueued and wait, running ones finish, none is claimed',
    description:
      'An operator’s route: in AWS it needs its own grant (the construct’s `grantOperate`), which the ' +
      'enqueue and read grants do not include. Each worker reads the pauses before a claim round, at most ' +
      '`takesEffectWithinMs` apart; a round already under way finishes. Pausing a paused type answers the same.',
    tag: 'types',
    callerScoped: false,
    answers: [{ status: 200, description: 'The type, paused.', schema: 'TypeControlAnswer' }],
    problems: { 404: NO_TYPE },
  },
  'POST /types/{type}/resume': {
    operationId: 'resumeType',
    summary: 'Resume a paused task type: its waiting tasks are claimed again',
    description: 'An operator’s route, as pause is. Resuming a type that is not paused answers the same.',
    tag: 'types',
    callerScoped: false,
    answers: [{ status: 200, description: 'The type, resumed.', schema: 'TypeControlAnswer' }],
    problems: { 404: NO_TYPE },
  },
  'GET /schedules': {
    operationId: 'listSchedules',
    summary: 'List the caller’s schedules by name',
    tag: 'schedules',
    query: schedulesQuery,
    answers: [{ status: 200, description: 'A page of schedules.', schema: 'SchedulePage' }],
    problems: { 400: BAD_QUERY },
  },
  'PUT /schedules/{name}': {
    operationId: 'putSchedule',
    summary: 'Create or replace a schedule',
    description:
      '`expression` is rate(...), cron(...) or at(...) as EventBridge Scheduler reads it, in `timezone`. ' +
      'Each fire enqueues `task`.',
    tag: 'schedules',
    body: 'ScheduleRequest',
    answers: [
      { status: 201, description: 'The schedule was created.', schema: 'ScheduleAnswer' },
      { status: 200, description: 'The schedule was replaced.', schema: 'ScheduleAnswer' },
    ],
    problems: {
      400: `${INVALID_BODY} Also a bad name, expression or time zone, or a one-time schedule in the past.`,
      409: 'The schedule kept changing under concurrent requests (SCHEDULE_CONFLICT). Names are per caller: another caller’s schedule of the same name is theirs, and never shows.',
      413: BODY_TOO_LARGE,
      415: NOT_JSON,
      503: NOT_SYNCED,
    },
  },
  'GET /schedules/{name}': {
    operationId: 'getSchedule',
    summary: 'Read one schedule, with its next fire',
    tag: 'schedules',
    answers: [{ status: 200, description: 'The schedule.', schema: 'ScheduleAnswer' }],
    problems: { 400: 'The name is not a schedule name (VALIDATION_FAILED).', 404: NO_SCHEDULE },
  },
  'DELETE /schedules/{name}': {
    operationId: 'deleteSchedule',
    summary: 'Delete a schedule',
    tag: 'schedules',
    answers: [{ status: 204, description: 'Deleted.' }],
    problems: {
      400: 'The name is not a schedule name (VALIDATION_FAILED).',
      404: NO_SCHEDULE,
      409: 'It kept changing under concurrent requests (SCHEDULE_CONFLICT).',
      503: NOT_SYNCED,
    },
  },
  'GET /schedules/{name}/fires': {
    operationId: 'listFires',
    summary: 'The schedule’s latest fires, and ticks it missed',
    tag: 'schedules',
    query: firesQuery,
    answers: [{ status: 200, description: 'Fires newest first, and missed ticks.', schema: 'FiresAnswer' }],
    problems: { 400: `${BAD_QUERY} Also a name that is not a schedule name.`, 404: NO_SCHEDULE },
  },
};
