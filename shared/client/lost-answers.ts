/**
 * What a repeated request's answer means when an earlier attempt's answer was lost: the earlier
 * attempt may have done the work, and the repeat then meets its result. Pure rules; the client reads
 * each answer through them (the API cannot tell a repeat from a second request).
 */
import { TaskStatus } from '../task-model.js';

/**
 * An enqueue answered "existing" under a key the client made for this one call: nobody else knows
 * that key, so the task is the one this call created (its first attempt's answer was lost).
 */
export function createdByThisCall(
  outcome: 'created' | 'existing',
  keyMadeByClient: boolean,
  earlierAttemptMayHaveLanded: boolean,
): boolean {
  return outcome === 'created' || (keyMadeByClient && earlierAttemptMayHaveLanded);
}

/**
 * The statuses a task is in after the command went through: a repeat refused 409 TASK_STATE_CONFLICT
 * with the task in one of them was most likely refused because the lost attempt had done it, and the
 * client answers with the task as read back. A cancel of a QUEUED task ends it CANCELLED (a repeat is
 * refused: it already ended); a RUNNING one becomes CANCEL_REQUESTED (a repeat is answered as is) and
 * then ends CANCELLED. A retry puts a FAILED or CANCELLED task back to QUEUED, from where it runs on.
 */
export const STATUSES_AFTER: Record<'cancel' | 'retry', readonly TaskStatus[]> = {
  cancel: [TaskStatus.CANCEL_REQUESTED, TaskStatus.CANCELLED],
  retry: [TaskStatus.QUEUED, TaskStatus.RUNNING, TaskStatus.CANCEL_REQUESTED, TaskStatus.SUCCESS],
};

export function commandMayHaveLanded(
  command: 'cancel' | 'retry',
  refusedStatus: string | undefined,
  earlierAttemptMayHaveLanded: boolean,
): boolean {
  return (
    earlierAttemptMayHaveLanded &&
    refusedStatus !== undefined &&
    (STATUSES_AFTER[command] as readonly string[]).includes(refusedStatus)
  );
}

/** A DELETE repeated after a lost answer finds nothing: the lost attempt deleted it. */
export function deletedByThisCall(status: number, earlierAttemptMayHaveLanded: boolean): boolean {
  return status === 404 && earlierAttemptMayHaveLanded;
}
