/** zod schemas for every store operation's input: bad input is refused here, before any write. */
import * as z from 'zod';
import { MAX_DURATION_MS } from './durations.js';
import { ValidationError } from './errors.js';
import { PRIORITY_LIMIT } from './table-layout.js';
import { TaskStatus } from './task-model.js';
import { groupSchema } from './group-name.js';

export const MAX_PAYLOAD_BYTES = 256 * 1024;
export const MAX_RESULT_BYTES = 64 * 1024;
export const MAX_ERROR_CHARS = 4096;
/** The longest progress note stored (worker/progress.ts cuts longer ones at the source). */
export const MAX_PROGRESS_NOTE_CHARS = 256;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

export const taskTypeSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    'must be 1-128 characters: letters, digits and . _ : - (starting with a letter or digit)',
  );
export const taskIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a task id (1-64 characters: letters, digits, _ and -)');
/**
 * Schedule definitions are listed by owner through the owner index too, in the partition
 * `SCHEDULES#<owner>` (schedules/schedule-store.ts); no task owner may start so, so a task list never
 * meets a definition and a schedule list never meets a task.
 */
export const SCHEDULE_OWNER_PREFIX = 'SCHEDULES#';
export const ownerSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(256, 'must be at most 256 characters')
  .refine(
    (o) => !o.startsWith(SCHEDULE_OWNER_PREFIX),
    `must not start with ${SCHEDULE_OWNER_PREFIX} (reserved for schedules)`,
  );
export const workerIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:@/-]{1,128}$/, 'must be 1-128 characters: letters, digits and . _ : @ / -');

/**
 * How deeply arrays and objects may nest in a payload (task payloads and schedule task payloads). The
 * fingerprint of an idempotent enqueue (ids.ts) and JSON.stringify recurse once per level and overflow
 * the stack a few thousand levels down, which was a 500; real payloads are far shallower than this.
 */
export const MAX_PAYLOAD_DEPTH = 64;

/**
 * Whether arrays and objects in `value` nest deeper than `maxDepth` (a scalar is depth 0, `[]` is 1),
 * or contain themselves. Walks with an explicit stack, never recursion, so any depth is measured
 * safely; it stops at the first node past the limit, or after `maxNodes` nodes (a value shared between
 * branches is walked once per branch, which could otherwise take for ever; as JSON each node takes at
 * least a byte, so more nodes than the byte limit is too large anyway).
 */
export function jsonShape(
  value: unknown,
  maxDepth: number,
  maxNodes: number,
): 'ok' | 'too-deep' | 'cyclic' | 'too-large' {
  /** [value, depth, leaving]: `leaving` marks the end of an object's subtree, to keep `path` to the current node's ancestors. */
  const stack: [unknown, number, boolean][] = [[value, 0, false]];
  const path = new Set<object>();
  for (let nodes = 0; stack.length > 0; nodes++) {
    if (nodes > 2 * maxNodes) return 'too-large';
    const [v, depth, leaving] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (leaving) {
      path.delete(v);
      continue;
    }
    if (path.has(v)) return 'cyclic';
    if (depth + 1 > maxDepth) return 'too-deep';
    path.add(v);
    stack.push([v, depth, true]);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1, false]);
  }
  return 'ok';
}

const shapeProblem = (shape: 'too-deep' | 'cyclic' | 'too-large', maxBytes: number) =>
  shape === 'too-deep'
    ? `nests arrays and objects more than ${MAX_PAYLOAD_DEPTH} levels deep; the limit is ${MAX_PAYLOAD_DEPTH}: flatten it, or send the deep part as a JSON string`
    : shape === 'cyclic'
      ? 'contains itself (a cycle), which JSON cannot hold'
      : `holds too many values: as JSON it would be over the limit of ${maxBytes} bytes`;

/** Refuses values nested deeper than MAX_PAYLOAD_DEPTH, cyclic or too large to walk, saying what to do; true when it passed. */
export function checkPayloadShape(value: unknown, ctx: z.RefinementCtx, maxBytes: number): boolean {
  const shape = jsonShape(value, MAX_PAYLOAD_DEPTH, maxBytes);
  if (shape !== 'ok') ctx.addIssue({ code: 'custom', message: shapeProblem(shape, maxBytes) });
  return shape === 'ok';
}

/** A payload as the API and schedules take it: any JSON nested at most MAX_PAYLOAD_DEPTH levels (size and form are checked at enqueue). */
export const payloadShape = z
  .unknown()
  .superRefine((value, ctx) => void checkPayloadShape(value, ctx, MAX_PAYLOAD_BYTES));

/** Any JSON value of bounded size (and, for payloads, depth). Functions, undefined at the top, NaN and cycles are refused. */
const jsonValue = (maxBytes: number, what: string, boundDepth = false) =>
  z.unknown().superRefine((value, ctx) => {
    // First, and without recursion: everything below recurses once per level.
    if (boundDepth && !checkPayloadShape(value, ctx, maxBytes)) return;
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: `${what} must be JSON-serialisable (no cycles or BigInt)` });
      return;
    }
    if (text === undefined) ctx.addIssue({ code: 'custom', message: `${what} must be a JSON value` });
    else if (jsonBytes(value) > maxBytes)
      ctx.addIssue({
        code: 'custom',
        message: `${what} is ${jsonBytes(value)} bytes as JSON; the limit is ${maxBytes}`,
      });
    else if (!sameAfterJson(value, text))
      ctx.addIssue({
        code: 'custom',
        message: `${what} must be plain JSON (no NaN, Infinity, Dates or undefined values)`,
      });
  });

function sameAfterJson(value: unknown, text: string): boolean {
  return JSON.stringify(JSON.parse(text)) === text && !containsNonJson(value);
}
function containsNonJson(v: unknown): boolean {
  if (typeof v === 'number') return !Number.isFinite(v);
  if (v === undefined || typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint')
    return true;
  if (Array.isArray(v)) return v.some(containsNonJson);
  if (v && typeof v === 'object') {
    if (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null) return true;
    return Object.values(v).some(containsNonJson);
  }
  return false;
}

/** A task payload as stored: plain JSON, at most MAX_PAYLOAD_BYTES as text and MAX_PAYLOAD_DEPTH levels deep. */
export const taskPayload = jsonValue(MAX_PAYLOAD_BYTES, 'payload', true);

export const epochMs = z
  .number()
  .int('must be epoch milliseconds (a whole number)')
  .min(0, 'must not be negative')
  .max(8.64e15);

/** A UTF-16 code unit of a surrogate pair with no partner: text no encoding can carry as it is. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * An idempotency key: it names the task (ids.ts hashes it as UTF-8), so it must be well-formed
 * Unicode. A lone surrogate becomes U+FFFD in UTF-8, and two keys that differ only there (JSON allows
 * "\ud800") would name the same task.
 */
export const idempotencyKeySchema = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .refine((key) => !LONE_SURROGATE.test(key), {
    message: 'must be well-formed Unicode (it holds half of a surrogate pair); send the key as text',
  });

/** The longest debounce window: a day. */
export const MAX_DEBOUNCE_WINDOW_MS = 86_400_000;

/**
 * Debounce (store/debounce.ts): enqueues with the same key, per owner and type, within `windowMs`
 * of each other collapse into one task, due `windowMs` after the last, with the last payload.
 */
export const debounceSchema = z
  .object({
    key: idempotencyKeySchema,
    windowMs: z
      .number()
      .int('must be whole milliseconds')
      .min(1, 'must be at least 1 ms')
      .max(MAX_DEBOUNCE_WINDOW_MS, `must be at most ${MAX_DEBOUNCE_WINDOW_MS} ms (a day)`),
  })
  .strict();

export const enqueueInput = z
  .object({
    type: taskTypeSchema,
    payload: taskPayload.optional(),
    owner: ownerSchema,
    priority: z.number().int('must be a whole number').min(-PRIORITY_LIMIT).max(PRIORITY_LIMIT).default(0),
    availableAt: epochMs.optional(),
    delayMs: z
      .number()
      .int('must be whole milliseconds')
      .min(0, 'must not be negative')
      .max(366 * 86_400_000, 'must be at most a year')
      .optional(),
    maxAttempts: z.number().int('must be a whole number').min(1).max(100).optional(),
    timeoutMs: z.number().int('must be whole milliseconds').positive().optional(),
    idempotencyKey: idempotencyKeySchema.optional(),
    group: groupSchema.optional(),
    debounce: debounceSchema.optional(),
  })
  .strict()
  .refine((v) => v.availableAt === undefined || v.delayMs === undefined, {
    message: 'give availableAt or delayMs, not both',
    path: ['delayMs'],
  })
  .refine((v) => v.debounce === undefined || (v.availableAt === undefined && v.delayMs === undefined), {
    message: 'a debounced task is due windowMs after the last enqueue of its key: give no due time or delay',
    path: ['debounce'],
  })
  .refine((v) => v.debounce === undefined || v.idempotencyKey === undefined, {
    message: 'give debounce or idempotencyKey, not both (a debounce key already names the task it joins)',
    path: ['debounce'],
  });
export type EnqueueInput = z.input<typeof enqueueInput>;

export const claimInput = z
  .object({
    workerId: workerIdSchema,
    types: z.array(taskTypeSchema).min(1, 'must name at least one task type').max(100),
    max: z.number().int('must be a whole number').min(1).max(1000),
    /** Take the tasks offered by key before reading any lane (a kick's run: claim.ts). */
    handedFirst: z.boolean().optional(),
    /** Types known to have grouped tasks (type-controls.ts): their rotation partitions are read too. */
    groupedTypes: z.array(taskTypeSchema).max(100).optional(),
  })
  .strict();
export type ClaimInput = z.input<typeof claimInput>;

const slotLease = z
  .object({
    scope: z.string().min(1),
    index: z.number().int().min(0),
    token: z.number().int().min(1),
    leaseUntil: z.number().int(),
  })
  .strict();

const unitCount = z.number().min(0).max(1e9);
/** A cost as a lease carries it (task-cost.ts). */
export const taskCostSchema = z
  .object({
    requests: unitCount,
    readUnits: unitCount,
    writeUnits: unitCount,
    indexWriteUnits: unitCount,
    handlerMs: unitCount,
  })
  .strict();

export const leaseSchema = z
  .object({
    taskId: taskIdSchema,
    type: taskTypeSchema,
    owner: workerIdSchema,
    token: z.number().int().min(1, 'must be a lease token from a claim'),
    leaseUntil: z.number().int(),
    sweepAt: z.number().int(),
    shard: z.number().int().min(0),
    /** Its rotation (group-rules.ts), when it waits in one: a requeue files it there again. */
    rotation: z.string().optional(),
    // What a requeue needs to rebuild the task's place in the ready index without a read.
    priority: z.number().int(),
    createdAt: z.number().int(),
    availableAt: z.number().int(),
    attempts: z.number().int().min(1),
    maxAttempts: z.number().int().min(1),
    slots: z.array(slotLease),
    /**
     * What this attempt cost since its last write to the task item (task-cost.ts): the next lease-path
     * write adds it to the task's recorded cost. Absent: nothing yet.
     */
    unrecorded: taskCostSchema.partial().optional(),
  })
  .strict();
export type Lease = z.infer<typeof leaseSchema>;
export type SlotLease = z.infer<typeof slotLease>;

/** A handler's progress report: stored with renewals and outcomes, handed to the next attempt. */
export const progressReport = z
  .object({ fraction: z.number().min(0).max(1), note: z.string().max(MAX_PROGRESS_NOTE_CHARS).optional() })
  .strict();

export const renewInput = z
  .object({
    leases: z.array(leaseSchema).max(1000),
    progress: z.record(z.string(), progressReport).optional(),
  })
  .strict();
export type RenewInput = z.input<typeof renewInput>;
export type ProgressReport = z.infer<typeof progressReport>;

export const completeInput = z
  .object({ lease: leaseSchema, result: jsonValue(MAX_RESULT_BYTES, 'result').optional() })
  .strict();
export const failInput = z
  .object({
    lease: leaseSchema,
    error: z
      .string()
      .min(1, 'must describe the failure')
      .transform((s) => s.slice(0, MAX_ERROR_CHARS)),
    retryable: z.boolean().default(true),
    backoff: z
      .object({
        baseMs: z.number().int().min(0).max(MAX_DURATION_MS),
        maxMs: z.number().int().min(0).max(MAX_DURATION_MS),
      })
      .strict()
      .optional(),
    progress: progressReport.optional(),
  })
  .strict();
export type FailInput = z.input<typeof failInput>;
export const leaseOnlyInput = z.object({ lease: leaseSchema }).strict();
export const releaseInput = z.object({ lease: leaseSchema, progress: progressReport.optional() }).strict();

export const taskRefInput = z.object({ id: taskIdSchema, owner: ownerSchema.optional() }).strict();

export const listInput = z
  .object({
    owner: ownerSchema,
    status: z.enum(Object.values(TaskStatus) as [TaskStatus, ...TaskStatus[]]).optional(),
    type: taskTypeSchema.optional(),
    limit: z.number().int().min(1).max(100).default(20),
    cursor: z
      .string()
      .max(2048, 'is not a cursor from an earlier page of this list; start again without one')
      .optional(),
  })
  .strict();
export type ListInput = z.input<typeof listInput>;

/** Parses input or throws one ValidationError naming every bad field. */
export function parseInput<S extends z.ZodType>(schema: S, operation: string, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ValidationError(
    operation,
    result.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message })),
  );
}
