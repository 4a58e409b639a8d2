/** What the worker writes when a handler settles: a pure decision from how it ended and why it was aborted. */
import { describeError, LeaseholdError } from '../errors.js';
import { WaitForChildren } from '../tasks/define.js';

/** Why a handler's signal aborted. */
export type AbortReason = 'lease-lost' | 'cancel-requested' | 'timeout' | 'shutdown';

/** The reason a handler's signal carries (`signal.reason`), and what `ctx.sleep()` throws when it aborts. */
export class TaskAbortedError extends LeaseholdError {
  override name = 'TaskAbortedError';
  override readonly code = 'TASK_ABORTED';
  constructor(readonly reason: AbortReason) {
    super(`task aborted: ${reason}`);
  }
}

export type HandlerEnd =
  | { kind: 'resolved'; result: unknown }
  | { kind: 'rejected'; error: unknown; retryable: boolean }
  /** Still running when the worker stopped waiting for it (it ignored its signal). */
  | { kind: 'abandoned' };

export type OutcomeWrite =
  | { write: 'complete'; result: unknown }
  | { write: 'fail'; error: string; retryable: boolean }
  | { write: 'finish-cancel' }
  | { write: 'release' }
  /** The handler returned ctx.waitForChildren(): the attempt ends unspent and the task waits. */
  | { write: 'wait-children' };

export function decideOutcome(
  end: HandlerEnd,
  abortReason: AbortReason | undefined,
  timeoutMs: number,
): OutcomeWrite {
  // Work that finished is recorded as done, whatever else happened meanwhile; if the lease is gone the token refuses it.
  if (end.kind === 'resolved')
    return end.result instanceof WaitForChildren
      ? { write: 'wait-children' }
      : { write: 'complete', result: end.result };
  switch (abortReason) {
    case 'cancel-requested':
      return { write: 'finish-cancel' };
    case 'shutdown':
      // The worker is going away, not the task failing: give it back without spending the attempt.
      return { write: 'release' };
    case 'timeout':
      return { write: 'fail', error: `timed out after ${timeoutMs} ms`, retryable: true };
    case 'lease-lost':
    case undefined:
      if (end.kind === 'abandoned') return { write: 'release' };
      // A rejection with no message (`throw ''`) still says what happened: the store needs a reason.
      return {
        write: 'fail',
        error: describeError(end.error) || 'the handler failed without a message',
        retryable: end.retryable,
      };
  }
}
