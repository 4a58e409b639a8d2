/**
 * zod schemas of the API's answers: what the OpenAPI document describes (api/openapi.ts), what the
 * client parses every answer with (client/), and what the API's own builders (task-json.ts,
 * schedule-model.ts) produce. One source, so the document, the client and the server cannot drift.
 */
import * as z from 'zod';
import { TaskStatus } from '../task-model.js';
import { MAX_BATCH_TASKS } from './request-schemas.js';

const isoTime = z.iso.datetime({ offset: true });

export const taskStatusSchema = z.enum(Object.values(TaskStatus) as [TaskStatus, ...TaskStatus[]]);

export const taskCostSchema = z
  .object({
    requests: z.number(),
    readUnits: z.number(),
    writeUnits: z.number(),
    indexWriteUnits: z.number(),
    handlerMs: z.number(),
  })
  .meta({ description: 'What the task cost so far: DynamoDB requests and units, handler milliseconds.' });

/** A task as every answer shows it (task-json.ts): times in ISO-8601, absent fields left out. */
export const taskJsonSchema = z
  .object({
    id: z.string(),
    type: z.string(),
    status: taskStatusSchema,
    priority: z.number().int(),
    /** Its group, when enqueued with one (absent from lists: GET /tasks/{id} brings it). */
    group: z.string().optional(),
    /** Absent from lists and from a task whose payload expired; GET /tasks/{id} brings it. */
    payload: z.unknown().optional(),
    payloadBytes: z.number().int().optional(),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    createdAt: isoTime,
    updatedAt: isoTime,
    availableAt: isoTime,
    startedAt: isoTime.optional(),
    finishedAt: isoTime.optional(),
    leaseOwner: z.string().optional(),
    leaseUntil: isoTime.optional(),
    progress: z.number().optional(),
    /** The note of the last progress report (`ctx.progress(fraction, note)`), at most 256 characters. */
    progressNote: z.string().optional(),
    result: z.unknown().optional(),
    error: z.string().optional(),
    /** A child of a flow: its parent's id (its end counts towards the parent's readiness). */
    parentId: z.string().optional(),
    /** A child whose FAILED or CANCELLED end does not fail its parent. */
    optional: z.boolean().optional(),
    /** A parent: its children, and how many of them have not ended yet (WAITING_CHILDREN until none). */
    children: z.object({ total: z.number().int(), pending: z.number().int() }).optional(),
    cost: taskCostSchema.optional(),
  })
  .meta({ id: 'Task' });
export type TaskJson = z.output<typeof taskJsonSchema>;

export const taskAnswerSchema = z.object({
  task: taskJsonSchema,
  /** POST /tasks with `debounce`: true when it joined this waiting task of its key (200) rather than making one (201). */
  joined: z.boolean().optional(),
});

export const taskPageSchema = z.object({
  tasks: z.array(taskJsonSchema),
  /** Absent on the last page. */
  nextCursor: z.string().optional(),
});

/** A child of a parent (GET /tasks/{id}/children): its status, and its result or error once it has ended. */
export const childJsonSchema = z
  .object({
    id: z.string(),
    type: z.string(),
    status: taskStatusSchema,
    /** A child whose FAILED or CANCELLED end does not fail its parent. */
    optional: z.boolean().optional(),
    /** Its result (SUCCESS), unless `resultOmitted`. */
    result: z.unknown().optional(),
    /** Its last error (FAILED, or retried after one). */
    error: z.string().optional(),
    /** The answer would be over 5 MB with this result: GET /tasks/{id} of the child brings it. */
    resultOmitted: z.literal(true).optional(),
  })
  .meta({ id: 'Child' });

/** GET /tasks/{id}/children: the children that exist, in the order they were enqueued (at most 1,000). */
export const childrenAnswerSchema = z.object({ children: z.array(childJsonSchema) });
export type ChildrenAnswer = z.output<typeof childrenAnswerSchema>;

/** A durable step a task stored (ctx.step), as GET /tasks/{id}/steps shows it. */
export const stepJsonSchema = z
  .object({
    name: z.string(),
    /** The step function's result, as stored (JSON), unless `resultOmitted`. */
    result: z.unknown().optional(),
    /** The fencing token of the attempt that stored it. */
    token: z.number().int(),
    storedAt: isoTime,
    /** The answer would be over 5 MB with this result. */
    resultOmitted: z.literal(true).optional(),
  })
  .meta({ id: 'Step' });

/** GET /tasks/{id}/steps: the steps the task stored, oldest first. */
export const stepsAnswerSchema = z.object({ steps: z.array(stepJsonSchema) });
export type StepsAnswer = z.output<typeof stepsAnswerSchema>;

/** The ids of a flow's tasks, shaped as the flow was sent: each task's id and its children's, in order. */
export interface FlowIdsJson {
  id: string;
  children?: FlowIdsJson[];
}

export const flowIdsSchema = z
  .object({
    id: z.string(),
    /** Absent for a task without children. */
    get children(): z.ZodOptional<z.ZodArray<typeof flowIdsSchema>> {
      return z.array(flowIdsSchema).optional();
    },
  })
  .meta({ id: 'FlowIds' });

/** POST /flows: the root task's id, every task's id in the shape sent, and the root task (WAITING_CHILDREN). */
export const flowAnswerSchema = z.object({
  id: z.string(),
  ids: flowIdsSchema,
  task: taskJsonSchema,
});
export type FlowAnswer = z.output<typeof flowAnswerSchema>;

/** An RFC 9457 problem: `code` is stable for programs, `detail` says what to fix, `errors` one per bad field. */
export const problemSchema = z
  .looseObject({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    code: z.string(),
    detail: z.string(),
    errors: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
    taskId: z.string().optional(),
    taskStatus: taskStatusSchema.optional(),
  })
  .meta({ id: 'Problem' });
export type Problem = z.output<typeof problemSchema>;

/** What API Gateway answers itself (403 for a bad signature, 404 for no route, 413, 429): not problem+json. */
export const gatewayMessageSchema = z.object({ message: z.string() });

export const scheduleJsonSchema = z
  .object({
    name: z.string(),
    expression: z.string(),
    timezone: z.string(),
    task: z.object({
      type: z.string(),
      payload: z.unknown().optional(),
      priority: z.number().int().optional(),
      maxAttempts: z.number().int().optional(),
    }),
    enabled: z.boolean(),
    createdAt: isoTime,
    updatedAt: isoTime,
    completedAt: isoTime.optional(),
    nextFireAt: isoTime.optional(),
    sync: z.object({ state: z.enum(['SYNCED', 'PENDING', 'FAILED', 'LOCAL']), error: z.string().optional() }),
  })
  .meta({ id: 'Schedule' });
export type ScheduleJson = z.output<typeof scheduleJsonSchema>;

export const scheduleAnswerSchema = z.object({ schedule: scheduleJsonSchema });

export const schedulePageSchema = z.object({
  schedules: z.array(scheduleJsonSchema),
  nextCursor: z.string().optional(),
});

export const fireJsonSchema = z
  .object({
    scheduledTime: isoTime,
    firedAt: isoTime,
    taskId: z.string().optional(),
    error: z.string().optional(),
  })
  .meta({ id: 'Fire' });
export type FireJson = z.output<typeof fireJsonSchema>;

export const firesAnswerSchema = z.object({
  fires: z.array(fireJsonSchema),
  /** Ticks that should have fired and did not, newest first. */
  missed: z.array(isoTime),
});

/** Tasks that ended in one minute, by how (a failed attempt that will run again is `retried`). */
export const outcomeCountsSchema = z
  .object({
    succeeded: z.number().int(),
    failed: z.number().int(),
    retried: z.number().int(),
    cancelled: z.number().int(),
  })
  .meta({ id: 'OutcomeCounts' });
export type OutcomeCountsJson = z.output<typeof outcomeCountsSchema>;

/** One minute of the caller's outcomes, per task type; minutes in which nothing ended are left out. */
export const outcomeMinuteSchema = z
  .object({
    /** The minute's start. */
    at: isoTime,
    types: z.record(z.string(), outcomeCountsSchema),
  })
  .meta({ id: 'OutcomeMinute' });
export type OutcomeMinuteJson = z.output<typeof outcomeMinuteSchema>;

/** One task type in the whole queue, as recovery's last depth gauge read it. */
export const queueTypeSchema = z
  .object({
    type: z.string(),
    /** Due tasks waiting to be claimed. */
    ready: z.number().int(),
    /** The due time of the oldest waiting task; absent when none waits. */
    oldestDueAt: isoTime.optional(),
    /** True when `ready` is an estimate (a deep backlog is sampled, not counted; store/queue-depth.ts). */
    estimated: z.boolean(),
  })
  .meta({ id: 'QueueType' });

/**
 * GET /stats: what a dashboard shows, in one request whose cost does not grow with the number of tasks.
 * `queue` is the whole queue (every owner: the gauge recovery writes once a minute); `running` and
 * `minutes` are the caller's own.
 */
export const statsAnswerSchema = z
  .object({
    /** The owner the caller acts as (whose tasks `running` and `minutes` count). */
    owner: z.string(),
    /** The server's time when it answered. */
    at: isoTime,
    /** Absent until recovery's first depth gauge. */
    queue: z
      .object({
        /** When recovery read it (once a minute). */
        at: isoTime,
        types: z.array(queueTypeSchema),
        /** Tasks under a lease (RUNNING or CANCEL_REQUESTED), every owner's. */
        leased: z.number().int(),
        /** Tasks waiting for their due time (delays, retry backoffs), every owner's. */
        delayed: z.number().int(),
        /** The earliest due time among delayed tasks. */
        nextDueAt: isoTime.optional(),
      })
      .optional(),
    /** The caller's running tasks (RUNNING, CANCEL_REQUESTED), lease expiring soonest first, without payload or result. */
    running: z.array(taskJsonSchema),
    /** False when the queue held more leases than one answer reads, so some of the caller's may be missing. */
    runningComplete: z.boolean(),
    /** The caller's outcomes per minute, oldest first, from `since` (at most 60 minutes back) to now. */
    minutes: z.array(outcomeMinuteSchema),
  })
  .meta({ id: 'Stats' });
export type StatsJson = z.output<typeof statsAnswerSchema>;

export const healthAnswerSchema = z.object({ status: z.literal('ok') });

/**
 * One item of POST /tasks/batch, answered on its own: `status` is what POST /tasks would have answered
 * for it (201 created, 200 existing under its idempotency key, 4xx or 503 with a problem).
 */
export const batchItemResultSchema = z.discriminatedUnion('outcome', [
  z.object({
    index: z.number().int(),
    outcome: z.literal('created'),
    status: z.literal(201),
    task: taskJsonSchema,
  }),
  z.object({
    index: z.number().int(),
    outcome: z.literal('existing'),
    status: z.literal(200),
    task: taskJsonSchema,
  }),
  z.object({
    index: z.number().int(),
    outcome: z.literal('failed'),
    status: z.number().int(),
    problem: problemSchema,
  }),
]);
export type BatchItemResult = z.output<typeof batchItemResultSchema>;

export const batchAnswerSchema = z.object({
  /** One per task sent, in the order sent. */
  results: z.array(batchItemResultSchema).max(MAX_BATCH_TASKS),
  created: z.number().int(),
  existing: z.number().int(),
  failed: z.number().int(),
});
export type BatchAnswer = z.output<typeof batchAnswerSchema>;

/** One task type as GET /types shows it (shared/stats/type-overview.ts). */
export const typeOverviewSchema = z
  .object({
    type: z.string(),
    /** Paused: its tasks are enqueued and wait, running ones finish, none is claimed until it resumes. */
    paused: z.boolean(),
    /** When it was last paused or resumed; absent if never. */
    changedAt: isoTime.optional(),
    /** Who last paused or resumed it (the caller's owner). */
    changedBy: z.string().optional(),
    /** Due tasks waiting, as of `waitingAt` (recovery's gauge, once a minute). */
    waiting: z.number().int(),
    /** Tasks under a lease now (RUNNING or CANCEL_REQUESTED). */
    running: z.number().int(),
    /** Tasks waiting for their due time (delays, retry backoffs). */
    delayed: z.number().int(),
  })
  .meta({ id: 'TypeOverview' });

export const typesAnswerSchema = z
  .object({
    types: z.array(typeOverviewSchema),
    /** When the waiting counts were gauged; absent before recovery's first gauge. */
    waitingAt: isoTime.optional(),
    /** Some count is an estimate: a deep queue is sampled, not counted. */
    estimated: z.boolean(),
  })
  .meta({ id: 'TypesAnswer' });

/** A type's controls as pause and resume answer them. */
export const typeControlSchema = z
  .object({
    type: z.string(),
    paused: z.boolean(),
    changedAt: isoTime,
    /** Who paused or resumed it (the caller's owner). */
    changedBy: z.string().optional(),
  })
  .meta({ id: 'TypeControl' });

export const typeControlAnswerSchema = z
  .object({
    type: typeControlSchema,
    /** How far apart workers read the pauses (the poll interval): rounds begun after a worker's next read take none of the type. */
    takesEffectWithinMs: z.number().int(),
  })
  .meta({ id: 'TypeControlAnswer' });
export type TypesJson = z.output<typeof typesAnswerSchema>;
export type TypeControlAnswerJson = z.output<typeof typeControlAnswerSchema>;
