/** zod schemas for every store operation's input: bad input is refused here, before any write. */
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { PRIORITY_LIMIT } from '../table-layout.js';
import { TaskStatus } from '../task-model.js';

export const MAX_PAYLOAD_BYTES = 256 * 1024;
export const MAX_RESULT_BYTES = 64 * 1024;
export const MAX_ERROR_CHARS = 4096;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

export const taskTypeSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'must be 1-128 characters: letters, digits and . _ : - (starting with a letter or digit)');
export const taskIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a task id (1-64 characters: letters, digits, _ and -)');
export const ownerSchema = z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters');
export const workerIdSchema = z.string().regex(/^[A-Za-z0-9._:@/-]{1,128}$/, 'must be 1-128 characters: letters, digits and . _ : @ / -');

/** Any JSON value of bounded size. Functions, undefined at the top, NaN and cycles are refused. */
const jsonValue = (maxBytes: number, what: string) =>
  z.unknown().superRefine((value, ctx) => {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: `${what} must be JSON-serialisable (no cycles or BigInt)` });
      return;
    }
    if (text === undefined) ctx.addIssue({ code: 'custom', message: `${what} must be a JSON value` });
    else if (jsonBytes(value) > maxBytes) ctx.addIssue({ code: 'custom', message: `${what} is ${jsonBytes(value)} bytes as JSON; the limit is ${maxBytes}` });
    else if (!sameAfterJson(value, text)) ctx.addIssue({ code: 'custom', message: `${what} must be plain JSON (no NaN, Infinity, Dates or undefined values)` });
  });

function sameAfterJson(value: unknown, text: string): boolean {
  return JSON.stringify(JSON.parse(text)) === text && !containsNonJson(value);
}
function containsNonJson(v: unknown): boolean {
  if (typeof v === 'number') return !Number.isFinite(v);
  if (v === undefined || typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint') return true;
  if (Array.isArray(v)) return v.some(containsNonJson);
  if (v && typeof v === 'object') {
    if (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null) return true;
    return Object.values(v).some(containsNonJson);
  }
  return false;
}

const epochMs = z.number().int('must be epoch milliseconds (a whole number)').min(0, 'must not be negative').max(8.64e15);

export const enqueueInput = z
  .object({
    type: taskTypeSchema,
    payload: jsonValue(MAX_PAYLOAD_BYTES, 'payload').optional(),
    owner: ownerSchema,
    priority: z.number().int('must be a whole number').min(-PRIORITY_LIMIT).max(PRIORITY_LIMIT).default(0),
    availableAt: epochMs.optional(),
    delayMs: z.number().int('must be whole milliseconds').min(0, 'must not be negative').max(366 * 86_400_000, 'must be at most a year').optional(),
    maxAttempts: z.number().int('must be a whole number').min(1).max(100).optional(),
    timeoutMs: z.number().int('must be whole milliseconds').positive().optional(),
    idempotencyKey: z.string().min(1, 'must not be empty').max(128, 'must be at most 128 characters').optional(),
  })
  .strict()
  .refine((v) => v.availableAt === undefined || v.delayMs === undefined, { message: 'give availableAt or delayMs, not both', path: ['delayMs'] });
export type EnqueueInput = z.input<typeof enqueueInput>;

export const claimInput = z
  .object({
    workerId: workerIdSchema,
    types: z.array(taskTypeSchema).min(1, 'must name at least one task type').max(100),
    max: z.number().int('must be a whole number').min(1).max(1000),
  })
  .strict();
export type ClaimInput = z.input<typeof claimInput>;

const slotLease = z.object({ scope: z.string().min(1), index: z.number().int().min(0), token: z.number().int().min(1), leaseUntil: z.number().int() }).strict();

export const leaseSchema = z
  .object({
    taskId: taskIdSchema,
    type: taskTypeSchema,
    owner: workerIdSchema,
    token: z.number().int().min(1, 'must be a lease token from a claim'),
    leaseUntil: z.number().int(),
    sweepAt: z.number().int(),
    shard: z.number().int().min(0),
    // What a requeue needs to rebuild the task's place in the ready index without a read.
    priority: z.number().int(),
    createdAt: z.number().int(),
    availableAt: z.number().int(),
    attempts: z.number().int().min(1),
    maxAttempts: z.number().int().min(1),
    slots: z.array(slotLease),
  })
  .strict();
export type Lease = z.infer<typeof leaseSchema>;
export type SlotLease = z.infer<typeof slotLease>;

export const renewInput = z
  .object({
    leases: z.array(leaseSchema).max(1000),
    progress: z.record(z.string(), z.object({ fraction: z.number().min(0).max(1), note: z.string().max(256).optional() }).strict()).optional(),
  })
  .strict();
export type RenewInput = z.input<typeof renewInput>;

export const completeInput = z.object({ lease: leaseSchema, result: jsonValue(MAX_RESULT_BYTES, 'result').optional() }).strict();
export const failInput = z
  .object({
    lease: leaseSchema,
    error: z.string().min(1, 'must describe the failure').transform((s) => s.slice(0, MAX_ERROR_CHARS)),
    retryable: z.boolean().default(true),
    backoff: z.object({ baseMs: z.number().int().min(0), maxMs: z.number().int().min(0) }).strict().optional(),
  })
  .strict();
export const leaseOnlyInput = z.object({ lease: leaseSchema }).strict();

export const taskRefInput = z.object({ id: taskIdSchema, owner: ownerSchema.optional() }).strict();

export const listInput = z
  .object({
    owner: ownerSchema,
    status: z.enum(Object.values(TaskStatus) as [TaskStatus, ...TaskStatus[]]).optional(),
    type: taskTypeSchema.optional(),
    limit: z.number().int().min(1).max(100).default(20),
    cursor: z.string().max(2048).optional(),
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
