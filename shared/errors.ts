import type { Task } from './task-model.js';

/**
 * Base of every error Leasehold throws on purpose. Each class carries what a caller needs to act on it:
 * a stable `code`, the HTTP `status` the API answers it with, how soon a retry may help
 * (`retryAfterSeconds`), and the members the API's problem answer adds (`problemDetails()`). The API maps
 * from these alone, so a new error class needs no change there.
 */
export class LeaseholdError extends Error {
  override name = 'LeaseholdError';
  readonly code: string = 'LEASEHOLD_ERROR';
  /**
   * The HTTP status of the API's answer. A class that does not say is not known to be the caller's
   * fault: 500. Input errors say 4xx, passing conditions worth a retry say 503.
   */
  readonly status: number = 500;
  /** Seconds after which the same request may succeed (the API's retry-after header); undefined: do not retry as is. */
  readonly retryAfterSeconds: number | undefined = undefined;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  /** What the caller is told (the API's problem `detail`): the message, unless a class words it for the caller. */
  callerDetail(): string {
    return this.message;
  }

  /** Members the API's problem answer carries besides type, title, status, code and detail (e.g. the task a conflict is about). */
  problemDetails(): Record<string, unknown> {
    return {};
  }
}

export interface InputProblem {
  /** Dotted path of the bad field, '' for the whole input. */
  path: string;
  message: string;
}

/** Bad input to a store operation or the API. Nothing was written. */
export class ValidationError extends LeaseholdError {
  override name = 'ValidationError';
  override readonly code = 'VALIDATION_FAILED';
  override readonly status = 400;
  constructor(
    readonly operation: string,
    readonly problems: InputProblem[],
  ) {
    super(`Invalid input to ${operation}: ${problems.map(formatProblem).join('; ')}`);
  }

  override callerDetail(): string {
    return `Fix these fields and send again: ${this.problems.map((p) => (p.path ? `${p.path} ${p.message}` : p.message)).join('; ')}.`;
  }

  /** `errors`: one member per bad field, as problem+json lists them. */
  override problemDetails(): Record<string, unknown> {
    return { errors: this.problems.map((p) => ({ field: p.path, message: p.message })) };
  }
}

/** Configuration that cannot work. Lists every problem at once so one fix round is enough. */
export class ConfigError extends LeaseholdError {
  override name = 'ConfigError';
  override readonly code = 'CONFIG_INVALID';
  override readonly status = 500;
  constructor(readonly problems: InputProblem[]) {
    super(`Invalid Leasehold configuration:\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`);
  }
}

export class TaskNotFoundError extends LeaseholdError {
  override name = 'TaskNotFoundError';
  override readonly code = 'TASK_NOT_FOUND';
  override readonly status = 404;
  constructor(readonly taskId: string) {
    super(`Task ${taskId} does not exist.`);
  }

  /** Another owner's task is "not found" too: the caller is not told it exists. */
  override callerDetail(): string {
    return `No task ${this.taskId} for this caller.`;
  }
}

/** A type route names a task type this deployment does not define (nothing was written). */
export class TaskTypeNotFoundError extends LeaseholdError {
  override name = 'TaskTypeNotFoundError';
  override readonly code = 'TYPE_NOT_FOUND';
  override readonly status = 404;
  constructor(
    readonly taskType: string,
    known: readonly string[],
  ) {
    super(`No task type "${taskType}" here; known types: ${known.join(', ') || '(none)'}.`);
  }
}

/** The idempotency key was used before for a different request; `existing` is the first task. */
export class IdempotencyConflictError extends LeaseholdError {
  override name = 'IdempotencyConflictError';
  override readonly code = 'IDEMPOTENCY_CONFLICT';
  override readonly status = 409;
  constructor(
    readonly idempotencyKey: string,
    readonly existing: Task,
  ) {
    super(
      `Idempotency key "${idempotencyKey}" was already used for a different request (task ${existing.id}); ` +
        'send the same request again, or use a new key.',
    );
  }

  override problemDetails(): Record<string, unknown> {
    return { taskId: this.existing.id };
  }
}

/** The operation is not allowed in the task's current status (e.g. cancelling a finished task). */
export class TaskStateConflictError extends LeaseholdError {
  override name = 'TaskStateConflictError';
  override readonly code = 'TASK_STATE_CONFLICT';
  override readonly status = 409;
  constructor(
    message: string,
    readonly task: Task,
  ) {
    super(message);
  }

  override problemDetails(): Record<string, unknown> {
    return { taskStatus: this.task.status };
  }
}

/**
 * A write under a lease was refused because the caller no longer holds the lease (another claim,
 * recovery, or a cancel moved the task on). `current` is the task as read back, if it still exists.
 */
export class LeaseLostError extends LeaseholdError {
  override name = 'LeaseLostError';
  override readonly code = 'LEASE_LOST';
  override readonly status = 409;
  constructor(
    readonly taskId: string,
    readonly token: number,
    readonly current: Task | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `Lease on task ${taskId} (token ${token}) is no longer held` +
        (current
          ? `: the task is ${current.status} with token ${current.leaseToken}.`
          : ': the task is gone.'),
      options,
    );
  }
}

/** Throw from a handler to fail the task at once, without the retries left. */
export class NonRetryableError extends LeaseholdError {
  override name = 'NonRetryableError';
  override readonly code = 'TASK_NON_RETRYABLE';
  override readonly status = 500;
  constructor(message = '', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** One line for logs and stored task errors: `Name: message` for an Error, else the value as text. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
}

function formatProblem(p: InputProblem): string {
  return p.path ? `${p.path}: ${p.message}` : p.message;
}

/** A store without flows and steps (a test's stand-in): flows cannot be enqueued, ctx.step and ctx.enqueueChildren cannot work. */
export class FlowsUnsupportedError extends LeaseholdError {
  override name = 'FlowsUnsupportedError';
  override readonly code = 'FLOWS_UNSUPPORTED';
  constructor() {
    super(
      'This store does not support flows and steps (enqueueFlow, ctx.step, ctx.enqueueChildren, ctx.waitForChildren).',
    );
  }
}
