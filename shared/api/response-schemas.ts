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
    result: z.unknown().optional(),
    error: z.string().optional(),
    cost: taskCostSchema.optional(),
  })
  .meta({ id: 'Task' });
export type TaskJson = z.output<typeof taskJsonSchema>;

export const taskAnswerSchema = z.object({ task: taskJsonSchema });

export const taskPageSchema = z.object({
  tasks: z.array(taskJsonSchema),
  /** Absent on the last page. */
  nextCursor: z.string().optional(),
});

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
