/** The typed errors of schedules; the HTTP layer maps each code to its status. */
import { LeaseholdError } from '../errors.js';
import { describeError } from '../worker/outcome.js';

export class ScheduleNotFoundError extends LeaseholdError {
  override name = 'ScheduleNotFoundError';
  override readonly code = 'SCHEDULE_NOT_FOUND';
  constructor(readonly scheduleName: string) {
    super(`No schedule "${scheduleName}" for this caller.`);
  }
}

export class ScheduleNameTakenError extends LeaseholdError {
  override name = 'ScheduleNameTakenError';
  override readonly code = 'SCHEDULE_NAME_TAKEN';
  constructor(readonly scheduleName: string) {
    super(`The schedule name "${scheduleName}" is taken by another caller; choose another name.`);
  }
}

/** The table and EventBridge Scheduler disagree after a failed call that may succeed later; the same request again repairs it. */
export class ScheduleSyncError extends LeaseholdError {
  override name = 'ScheduleSyncError';
  override readonly code = 'SCHEDULE_NOT_SYNCED';
  constructor(
    readonly scheduleName: string,
    readonly action: 'save' | 'delete',
    options: { cause: unknown },
  ) {
    super(
      action === 'save'
        ? `Schedule "${scheduleName}" is saved but EventBridge Scheduler did not accept it (${describeError(options.cause)}); it is marked FAILED. Send the same PUT again to retry.`
        : `Schedule "${scheduleName}" is disabled but EventBridge Scheduler did not delete it (${describeError(options.cause)}). Send the DELETE again to finish.`,
      options,
    );
  }
}

/**
 * EventBridge Scheduler refused the definition for a reason sending it again cannot fix (its
 * ValidationException, a quota, a permission). Nothing was changed: the table holds what it held before.
 */
export class ScheduleRejectedError extends LeaseholdError {
  override name = 'ScheduleRejectedError';
  override readonly code = 'SCHEDULE_REJECTED';
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
}

/** Concurrent requests kept changing the schedule while this one tried to apply; read it and decide again. */
export class ScheduleConflictError extends LeaseholdError {
  override name = 'ScheduleConflictError';
  override readonly code = 'SCHEDULE_CONFLICT';
  constructor(
    readonly scheduleName: string,
    detail: string,
  ) {
    super(`Schedule "${scheduleName}" ${detail}; GET it to see what it holds now, then send your request again if it is still wanted.`);
  }
}
