/**
 * One renewal round, answered lease by lease whatever happens to the round. The store answers each
 * lease on its own, but a round can still throw as a whole (input it refuses, a bug, a store that
 * gives up). The worker used to only log that, so no handler was ever told and every lease of the
 * worker ran out under handlers that kept running (review finding 2). Here such a round becomes an
 * 'error' answer for each of its leases: the worker then aborts each handler once its own clock says
 * the lease ran out, as it does for a single failed renewal.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { LeaseholdError, ValidationError } from '../errors.js';
import type { Lease } from '../store/inputs.js';
import type { RenewOutcome } from '../store/lease-writes.js';
import type { TaskStore } from '../store/task-store.js';
import { describeError } from './outcome.js';
import type { Progress } from './progress.js';

/** The store gave no answer for one of the leases it was sent. */
export class MissingRenewalError extends LeaseholdError {
  override name = 'MissingRenewalError';
  override readonly code = 'RENEWAL_UNANSWERED';
  constructor(readonly taskId: string) {
    super(`the renewal round returned no outcome for task ${taskId}`);
  }
}

/** Renews `leases`; returns one outcome per lease, in their order. Never throws. */
export async function renewRound(store: Pick<TaskStore, 'renew'>, leases: Lease[], progress: Record<string, Progress>, logger: Logger): Promise<RenewOutcome[]> {
  const everyLease = (error: unknown) => leases.map((l): RenewOutcome => ({ taskId: l.taskId, outcome: 'error', error }));
  let answers: RenewOutcome[];
  try {
    answers = await store.renew({ leases, progress });
  } catch (error) {
    logger.error('renewal round failed', { error: describeError(error) });
    // Progress is advisory and leases are not: refused input may be a report, so try once without them.
    if (!(error instanceof ValidationError) || Object.keys(progress).length === 0) return everyLease(error);
    try {
      answers = await store.renew({ leases });
    } catch (again) {
      logger.error('renewal round failed without progress reports too', { error: describeError(again) });
      return everyLease(again);
    }
  }
  const byTask = new Map(answers.map((a) => [a.taskId, a]));
  return leases.map((l) => byTask.get(l.taskId) ?? { taskId: l.taskId, outcome: 'error', error: new MissingRenewalError(l.taskId) });
}
