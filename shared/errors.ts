import type { Task } from './task-model.js';

/** Base of every error Leasehold throws on purpose; `code` is stable for callers and the HTTP layer. */
export class LeaseholdError extends Error {
  override name = 'LeaseholdError';
  readonly code: string = 'LEASEHOLD_ERROR';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
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
  constructor(
    readonly operation: string,
    readonly problems: InputProblem[],
  ) {
    super(`Invalid input to ${operation}: ${problems.map(formatProblem).join('; ')}`);
  }
}

/** Configuration that cannot work. Lists every problem at once so one fix round is enough. */
export class ConfigError extends LeaseholdError {
  override name = 'ConfigError';
  override readonly code = 'CONFIG_INVALID';
  constructor(readonly problems: InputProblem[]) {
    super(`Invalid Leasehold configuration:\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`);
  }
}

export class TaskNotFoundError extends LeaseholdError {
  override name = 'TaskNotFoundError';
  override readonly code = 'TASK_NOT_FOUND';
  constructor(readonly taskId: string) {
    super(`Task ${taskId} does not exist.`);
  }
}

/** The idempotency key was used before for a different request; `existing` is the first task. */
export class IdempotencyConflictError extends LeaseholdError {
  override name = 'IdempotencyConflictError';
  override readonly code = 'IDEMPOTENCY_CONFLICT';
  constructor(
    readonly idempotencyKey: string,
    readonly existing: Task,
  ) {
    super(
      `Idempotency key "${idempotencyKey}" was already used for a different request (task ${existing.id}); ` +
        'send the same request again, or use a new key.',
    );
  }
}

/** The operation is not allowed in the task's current status (e.g. cancelling a finished task). */
export class TaskStateConflictError extends LeaseholdError {
  override name = 'TaskStateConflictError';
  override readonly code = 'TASK_STATE_CONFLICT';
  constructor(
    message: string,
    readonly task: Task,
  ) {
    super(message);
  }
}

/**
 * A write under a lease was refused because the caller no longer holds the lease (another claim,
 * recovery, or a cancel moved the task on). `current` is the task as read back, if it still exists.
 */
export class LeaseLostError extends LeaseholdError {
  override name = 'LeaseLostError';
  override readonly code = 'LEASE_LOST';
  constructor(
    readonly taskId: string,
    readonly token: number,
    readonly current: Task | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `Lease on task ${taskId} (token ${token}) is no longer held` +
        (current ? `: the task is ${current.status} with token ${current.leaseToken}.` : ': the task is gone.'),
      options,
    );
  }
}

function formatProblem(p: InputProblem): string {
  return p.path ? `${p.path}: ${p.message}` : p.message;
}
