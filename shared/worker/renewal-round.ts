/**
 * One renewal round, answered lease by lease whatever happens to the round. The store answers each
 * lease on its own, but a round can still throw as a whole (input it refuses, a bug, a store that
 * gives up). The worker used to only log that, so no handler was ever told and every lease of the
 * worker ran out under handlers that kept running. Here such a round becomes an
 * 'error' answer for each of its leases: the worker then aborts each handler once its own clock says
 * the lease ran out, as it does for a single failed renewal.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { describeError, LeaseholdError } from '../errors.js';
import type { Lease, ProgressReport } from '../task-inputs.js';
import type { RenewOutcome } from '../store/lease-writes.js';
import type { LeaseStore } from '../store/ports.js';

/** The store gave no answer for one of the leases it was sent. */
export class MissingRenewalError extends LeaseholdError {
  override name = 'MissingRenewalError';
  override readonly code = 'RENEWAL_UNANSWERED';
  constructor(readonly taskId: string) {
    super(`the renewal round returned no outcome for task ${taskId}`);
  }
}

/** Renews `leases`; returns one outcome per lease, in their order. Never throws. */
export async function renewRound(
  store: Pick<LeaseStore, 'renew'>,
  leases: Lease[],
  progress: Record<string, ProgressReport>,
  logger: Logger,
): Promise<RenewOutcome[]> {
  let answers: RenewOutcome[];
  try {
    // Reports are made fit to store when the handler gives them (progress.ts), so the store refusing
    // a round is not a report's doing: every lease gets the error.
    answers = await store.renew({ leases, progress });
  } catch (error) {
    logger.error('renewal round failed', { error: describeError(error) });
    return leases.map((l): RenewOutcome => ({ taskId: l.taskId, outcome: 'error', error }));
  }
  const byTask = new Map(answers.map((a) => [a.taskId, a]));
  return leases.map(
    (l) =>
      byTask.get(l.taskId) ?? {
        taskId: l.taskId,
        outcome: 'error',
        error: new MissingRenewalError(l.taskId),
      },
  );
}
