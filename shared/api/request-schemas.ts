/** zod schemas for the API's request bodies and query strings. */
import * as z from 'zod';
import { PRIORITY_LIMIT } from '../table-layout.js';
import { TaskStatus } from '../task-model.js';
import { debounceSchema, idempotencyKeySchema, payloadShape } from '../task-inputs.js';
import { groupSchema } from '../group-name.js';

export const MAX_BODY_BYTES = 256 * 1024;
/** The most tasks one POST /tasks/batch takes (the whole body still at most MAX_BODY_BYTES). */
export const MAX_BATCH_TASKS = 100;

/** The fields of a task that POST /tasks and each task of POST /flows take alike. */
const taskFields = {
  type: z.string({ error: 'is required: the task type to run' }),
  // Depth first: the task type's own schema runs before the store's checks, and may recurse.
  payload: payloadShape.optional(),
  priority: z.number().int('must be a whole number').min(-PRIORITY_LIMIT).max(PRIORITY_LIMIT).optional(),
  maxAttempts: z.number().int('must be a whole number').min(1).max(100).optional(),
  timeoutSeconds: z.number().int('must be whole seconds').min(1).optional(),
  group: groupSchema.optional(),
};

export const enqueueBody = z
  .object({
    type: taskFields.type,
    payload: taskFields.payload,
    priority: taskFields.priority,
    delaySeconds: z
      .number()
      .int('must be whole seconds')
      .min(0)
      .max(366 * 86_400, 'must be at most a year')
      .optional(),
    runAt: z.iso
      .datetime({
        offset: true,
        error: 'must be an ISO-8601 date-time with a zone, e.g. 2026-12-01T09:00:00Z',
      })
      .optional(),
    maxAttempts: taskFields.maxAttempts,
    timeoutSeconds: taskFields.timeoutSeconds,
    idempotencyKey: idempotencyKeySchema.optional(),
    group: taskFields.group,
    debounce: debounceSchema.optional(),
  })
  .strict()
  .refine((b) => b.delaySeconds === undefined || b.runAt === undefined, {
    message: 'give delaySeconds or runAt, not both',
    path: ['runAt'],
  })
  .refine((b) => b.debounce === undefined || (b.delaySeconds === undefined && b.runAt === undefined), {
    message:
      'a debounced task is due windowMs after the last enqueue of its key: give no delaySeconds or runAt',
    path: ['debounce'],
  })
  .refine((b) => b.debounce === undefined || b.idempotencyKey === undefined, {
    message: 'give debounce or idempotencyKey, not both (a debounce key already names the task it joins)',
    path: ['debounce'],
  });

/**
 * POST /tasks/batch: the envelope only. Each task is checked on its own with `enqueueBody`, so one bad
 * task is answered with its own problem and the others are still enqueued.
 */
export const batchBody = z
  .object({
    tasks: z
      .array(z.unknown(), { error: 'is required: an array of tasks, each as the body of POST /tasks' })
      .min(1, 'must hold at least one task')
      .max(MAX_BATCH_TASKS, `must hold at most ${MAX_BATCH_TASKS} tasks; send more in further batches`),
  })
  .strict();

/**
 * POST /flows: a root task and its children, each a task (`{type, payload, ...}`) or a flow of its own
 * (`{task, children}`: a child with a `task` member is a flow). Its tasks take the fields of POST /tasks
 * but no due time, debounce or key of their own (a parent is due when its children have ended; the
 * flow's `idempotencyKey` names every task of it). flow-request.ts checks the limits (flow-rules.ts)
 * before this schema, and names a refused child by its path (`children.3.task.payload.n`).
 */
export const flowTaskBody = z
  .object(taskFields)
  .strict()
  .meta({ description: 'The root task of a flow: the fields of POST /tasks without a due time or key.' });

export const flowChildTaskBody = z
  .object({
    ...taskFields,
    optional: z
      .boolean()
      .optional()
      .meta({ description: 'Its FAILED or CANCELLED end does not fail its parent.' }),
  })
  .strict()
  .meta({ description: 'A child task: a task of the flow without children of its own.' });

export const flowChildFlowBody = z
  .object({
    task: flowChildTaskBody,
    get children(): z.ZodArray<typeof flowChildBody> {
      return z
        .array(flowChildBody)
        .min(1, 'must hold at least one child (a child without children is sent as a task: {type, payload})');
    },
  })
  .strict()
  .meta({ description: 'A child that is a flow of its own: its task waits for its children.' });

export const flowChildBody = z.union([flowChildFlowBody, flowChildTaskBody]);

export const flowBody = z
  .object({
    task: flowTaskBody,
    children: z
      .array(flowChildBody, { error: 'is required: the root task’s children, each a task or a flow' })
      .min(1, 'must hold at least one child (enqueue a task without children with POST /tasks)'),
    /** Sent again with the same key and body, the flow is answered again (200), not made twice. */
    idempotencyKey: idempotencyKeySchema.optional(),
  })
  .strict();

export const listQuery = z
  .object({
    status: z.enum(Object.values(TaskStatus) as [TaskStatus, ...TaskStatus[]]).optional(),
    type: z.string().optional(),
    limit: z.coerce.number().int('must be a whole number').min(1).max(100).optional(),
    cursor: z.string().optional(),
  })
  .strict();

export const firesQuery = z
  .object({ limit: z.coerce.number().int('must be a whole number').min(1).max(100).default(20) })
  .strict();

/** GET /schedules: a page of the caller's schedules by name, and the cursor of the next one. */
export const schedulesQuery = z
  .object({
    limit: z.coerce.number().int('must be a whole number').min(1).max(100).default(100),
    cursor: z
      .string()
      .max(2048, 'is not a cursor from an earlier page of this list; start again without one')
      .optional(),
  })
  .strict();

/** How far back GET /stats counts outcomes: the dashboard's chart covers the last hour. */
export const STATS_WINDOW_MINUTES = 60;

/**
 * GET /stats: `since` is the start of the first minute wanted (a dashboard that already holds the hour
 * asks only for its last few minutes, which late flushes may still change); earlier than an hour ago
 * reads an hour.
 */
export const statsQuery = z
  .object({
    since: z.iso
      .datetime({
        offset: true,
        error: 'must be an ISO-8601 date-time with a zone, e.g. 2026-12-01T09:00:00Z',
      })
      .optional(),
  })
  .strict();
