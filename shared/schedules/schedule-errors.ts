/**
 * The typed errors of schedules, in the schedule service's terms. Each carries its code and HTTP status;
 * the API answers from those (and words a retry as the HTTP request to send again).
 */
import { describeError, LeaseholdError } from '../errors.js';

export class ScheduleNotFoundError extends LeaseholdError {
  override name = 'ScheduleNotFoundError';
  override readonly code = 'SCHEDULE_NOT_FOUND';
  override readonly status = 404;
  constructor(readonly scheduleName: string) {
    super(`No schedule "${scheduleName}" for this caller.`);
  }
}

/** The table and EventBridge Scheduler disagree after a failed call that may succeed later; the same request again repairs it. */
export class ScheduleSyncError extends LeaseholdError {
  override name = 'ScheduleSyncError';
  override readonly code = 'SCHEDULE_NOT_SYNCED';
  override readonly status = 503;
  override readonly retryAfterSeconds = 5;
  /** What happened, without the advice of what to do (the message adds it; the API words it as its request). */
  readonly situation: string;
  constructor(
    readonly scheduleName: string,
    /** What to do again to repair it: save the same definition, or delete the schedule. */
    readonly action: 'save' | 'delete',
    options: { cause: unknown },
  ) {
    const situation =
      action === 'save'
        ? `Schedule "${scheduleName}" is saved but EventBridge Scheduler did not accept it (${describeError(options.cause)}); it is marked FAILED.`
        : `Schedule "${scheduleName}" is disabled but EventBridge Scheduler did not delete it (${describeError(options.cause)}).`;
    super(
      `${situation} ${action === 'save' ? 'Save the same definition again to retry.' : 'Delete it again to finish.'}`,
      options,
    );
    this.situation = situation;
  }
}

/**
 * EventBridge Scheduler refused the definition for a reason sending it again cannot fix (its
 * ValidationException, a quota, a permission). Nothing was changed: the table holds what it held before.
 */
export class ScheduleRejectedError extends LeaseholdError {
  override name = 'ScheduleRejectedError';
  override readonly code = 'SCHEDULE_REJECTED';
  override readonly status = 400;
  constructor(
    readonly scheduleName: string,
    readonly reason: string,
    replaced: boolean,
    options: { cause: unknown },
  ) {
    super(
      `EventBridge Scheduler refused schedule "${scheduleName}": ${reason}. Nothing was changed (${replaced ? 'the previous definition stays in force' : 'no schedule was created'}); fix the request before sending it again.`,
      options,
    );
  }

  override problemDetails(): Record<string, unknown> {
    return { reason: this.reason };
  }
}

/** Concurrent requests kept changing the schedule while this one tried to apply; read it and decide again. */
export class ScheduleConflictError extends LeaseholdError {
  override name = 'ScheduleConflictError';
  override readonly code = 'SCHEDULE_CONFLICT';
  override readonly status = 409;
  constructor(
    readonly scheduleName: string,
    detail: string,
  ) {
    super(
      `Schedule "${scheduleName}" ${detail}; read it to see what it holds now, then send your request again if it is still wanted.`,
    );
  }
}
