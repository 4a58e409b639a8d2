/** How users declare task types: a name, a zod schema for the payload, the handler and its policy. */
import type * as z from 'zod';
import type { BackoffPolicy } from '../lease-rules.js';
import type { RateLimit } from '../rate-rules.js';
import type { ChildView } from '../store/children-reads.js';

/** What a handler can use while it runs. */
export interface TaskContext {
  taskId: string;
  /** 1 for the first attempt. */
  attempt: number;
  /**
   * The fencing token of this claim: it grows with every claim of the task. Pass it to the systems
   * you write to (a conditional write, a version column) so a stale attempt cannot overwrite a newer one.
   */
  token: number;
  /** Aborts when the lease is lost, a cancel is requested, the timeout passes or the worker shuts down. */
  signal: AbortSignal;
  /** Renews this task's lease now: call it inside long CPU-bound loops that starve the heartbeat timer. */
  heartbeat(): Promise<void>;
  /**
   * Reports progress (0..1); stored with the next lease renewal, so it costs no extra write. NaN
   * (e.g. 0 of 0 done) is ignored and the last report stands; other values are clamped to 0..1 and the
   * note is cut to 256 characters. A fraction that is not a number throws a ValidationError.
   */
  progress(fraction: number, note?: string): void;
  /**
   * Waits `ms`, or until the signal aborts; then it throws the abort reason (a TaskAbortedError), so a
   * handler that sleeps between steps stops at once when cancelled, timed out or shut down.
   */
  sleep(ms: number): Promise<void>;
  /**
   * The last progress report an earlier attempt stored (a checkpoint, as Temporal's heartbeat details
   * are): a retried handler can resume from `note` instead of starting over. Undefined on a task no
   * attempt reported on; an attempt that reports nothing leaves the earlier report in place.
   */
  previous?: { progress: number; note?: string };
  logger: TaskLogger;
  /**
   * A durable step: the first time, runs `fn` and stores its JSON result with the task (under this
   * attempt's token); on a later attempt, or after waiting for children, returns the stored result
   * without running `fn` again. Names are unique per task; a result has the payload's size limit; a
   * step whose `fn` throws is not stored.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * Enqueues children of this task (each `{ type, payload, ... }`, `optional: true` for one whose failure
   * must not fail this task); their ids, in order. Then `return ctx.waitForChildren()`. A retried attempt
   * that enqueues the same children again meets those written before (their ids are this task's).
   */
  enqueueChildren(children: ChildTask[]): Promise<string[]>;
  /**
   * Returned from the handler (`return ctx.waitForChildren()`): ends this attempt without using it up,
   * and the task waits (WAITING_CHILDREN) without holding an invocation. When every child has ended it
   * runs again, with `ctx.children` filled in. Only after this attempt enqueued children.
   */
  waitForChildren(): WaitForChildren;
  /**
   * This task's children, in the order they were enqueued, each with its id, type, status and result
   * (or error): empty for a task without children.
   */
  children: ChildView[];
}

/** A child for ctx.enqueueChildren: a task as enqueued, and whether its failure may be ignored. */
export interface ChildTask {
  type: string;
  payload?: unknown;
  priority?: number;
  maxAttempts?: number;
  timeoutMs?: number;
  /** Its FAILED or CANCELLED end does not fail the parent. */
  optional?: boolean;
}

/** What `ctx.waitForChildren()` returns, for the handler to return. */
export class WaitForChildren {
  readonly waitForChildren = true;
}

export type { ChildView };

export interface TaskLogger {
  debug(message: string, extra?: Record<string, unknown>): void;
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

/**
 * A task type. `S` is the payload's schema; `R` what the handler returns (stored as JSON, the task's
 * `result`): the typed client (leasehold/client) takes both from the definition.
 */
export interface TaskDefinition<S extends z.ZodType = z.ZodType, R = unknown> {
  name: string;
  schema: S;
  handler: (payload: z.output<S>, context: TaskContext) => R | Promise<R>;
  maxAttempts?: number;
  /** Abort the handler and count a failed attempt after this long (default: LEASEHOLD_MAX_EXECUTION_MS). */
  timeoutMs?: number;
  /** At most this many tasks of this type run at once, across all workers. */
  concurrency?: number;
  /**
   * At most `limit` starts of this type in any window of `intervalMs`, across all workers, processes and
   * invocations (each start's `startedAt` counts). A task over it waits; its wait spends no attempt.
   */
  rateLimit?: RateLimit;
  /**
   * At most this many tasks of one group (`group` on enqueue, named within its owner) run at once,
   * across all workers; default 1: a group's tasks run one at a time, in claim order.
   */
  groupConcurrency?: number;
  /**
   * Owners share this type's claims in turn: each owner's tasks wait in a rotation of their own, so one
   * owner's backlog never delays another's next task by more than a claim round.
   */
  fairShares?: boolean;
  /** Retry delays; each of baseMs and maxMs at most 7 days (TaskRegistry refuses more). */
  backoff?: BackoffPolicy;
}

/** Declares a task type; the payload type of the handler follows from the schema. */
export function defineTask<S extends z.ZodType, R = unknown>(
  definition: TaskDefinition<S, R>,
): TaskDefinition<S, R> {
  return definition;
}

/** Throw from a handler to fail the task at once, without the retries left (defined with the other errors). */
export { NonRetryableError } from '../errors.js';
