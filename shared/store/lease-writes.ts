/**
 * Every write made under a lease: renew, complete, fail, release, and the holder's side of a cancel.
 * Each is one conditional update on the claim's fencing token. A ConditionalCheckFailed is read back
 * (consistently) before it is called a lost lease: the SDK may have retried a write whose first
 * attempt applied and whose answer was lost.
 */
import { LeaseLostError } from '../errors.js';
import { decideFailure, leaseExpiry, sweepKeyAfterRenewal } from '../lease-rules.js';
import { delaySweepPartition, INDEX, readyPartition, readySortKey, taskKey } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate, type WriteOptions } from './conditional-write.js';
import { RENEWAL } from './lease-item.js';
import { hasStatus, holdsLease } from './conditions.js';
import { Expression } from './expression.js';
import { completeInput, failInput, leaseOnlyInput, parseInput, renewInput, type Lease, type RenewInput } from './inputs.js';
import { releaseSlots, renewSlots } from './slots.js';
import { finishedFields, LEASE_FIELDS_CLEARED, toTask, type TaskItem } from './task-item.js';

export type RenewOutcome =
  | { taskId: string; outcome: 'renewed'; lease: Lease }
  | { taskId: string; outcome: 'cancel-requested'; lease: Lease }
  | { taskId: string; outcome: 'lost'; current: Task | undefined }
  | { taskId: string; outcome: 'error'; error: unknown };


/**
 * Sends one update conditioned on the lease; returns the item after it, or throws LeaseLostError.
 * The primitive settles lost answers (resent under the same write id, read back when refused).
 */
async function writeUnderLease(ctx: StoreContext, lease: Lease, e: Expression, options: WriteOptions, seededBug = false): Promise<TaskItem> {
  // The seeded bug (chaos checker test only) drops the fencing token from the condition.
  e.require(seededBug ? hasStatus(TaskStatus.RUNNING) : holdsLease(lease.owner, lease.token));
  const written = await conditionalUpdate<TaskItem>(writeTargetOf(ctx), taskKey(lease.taskId), e, { ...options, needCurrent: true });
  if (written.applied) return written.item;
  throw new LeaseLostError(lease.taskId, lease.token, written.current && toTask(written.current));
}

/** One heartbeat round: every lease renewed in parallel; the answers tell lost leases and cancel requests apart. */
export async function renewLeases(ctx: StoreContext, rawInput: RenewInput): Promise<RenewOutcome[]> {
  const input = parseInput(renewInput, 'renewLeases', rawInput);
  const now = ctx.clock.now();
  const leaseUntil = leaseExpiry(now, ctx.config);
  return Promise.all(
    input.leases.map(async (lease): Promise<RenewOutcome> => {
      try {
        // Slots first: a task lease must never outlive the slot that admits it.
        if (lease.slots.length > 0 && !(await renewSlots(ctx, lease.owner, lease.slots, leaseUntil))) {
          return { taskId: lease.taskId, outcome: 'lost', current: undefined };
        }
        const sweepAt = sweepKeyAfterRenewal(lease.sweepAt, leaseUntil, ctx.config);
        const progress = input.progress?.[lease.taskId];
        const e = new Expression().set('leaseUntil', leaseUntil);
        if (sweepAt !== undefined) e.set(INDEX.sweep.sort, sweepAt);
        if (progress) e.assign({ progress: progress.fraction, progressNote: progress.note });
        const item = await writeUnderLease(ctx, lease, e, RENEWAL);
        const renewed: Lease = { ...lease, leaseUntil, sweepAt: sweepAt ?? lease.sweepAt, slots: lease.slots.map((s) => ({ ...s, leaseUntil })) };
        return { taskId: lease.taskId, outcome: item.status === TaskStatus.CANCEL_REQUESTED ? 'cancel-requested' : 'renewed', lease: renewed };
      } catch (error) {
        if (error instanceof LeaseLostError) return { taskId: lease.taskId, outcome: 'lost', current: error.current };
        return { taskId: lease.taskId, outcome: 'error', error };
      }
    }),
  );
}

/** Records success. Allowed while a cancel is pending: the work is done, and SUCCESS says so. */
export async function complete(ctx: StoreContext, rawInput: { lease: Lease; result?: unknown }): Promise<Task> {
  const { lease, result } = parseInput(completeInput, 'complete', rawInput);
  const now = ctx.clock.now();
  const e = new Expression().assign({
    ...LEASE_FIELDS_CLEARED,
    status: TaskStatus.SUCCESS,
    result: JSON.stringify(result ?? null),
    updatedAt: now,
    ...finishedFields(now, ctx.config),
  });
  return settle(ctx, lease, e, ctx.config.testSeededBug === 'complete-without-token');
}

/** Records a failed attempt: back to the queue after a backoff while attempts remain, else FAILED. */
export async function fail(ctx: StoreContext, rawInput: { lease: Lease; error: string; retryable?: boolean; backoff?: { baseMs: number; maxMs: number } }): Promise<Task> {
  const input = parseInput(failInput, 'fail', rawInput);
  const { lease } = input;
  const now = ctx.clock.now();
  const policy = input.backoff ?? { baseMs: ctx.config.backoffBaseMs, maxMs: ctx.config.backoffMaxMs };
  const outcome = decideFailure(lease, now, input.retryable, policy, ctx.random);
  const fields: Record<string, unknown> = { ...LEASE_FIELDS_CLEARED, error: input.error, updatedAt: now, status: outcome.status };
  if (outcome.status === TaskStatus.FAILED) Object.assign(fields, finishedFields(now, ctx.config));
  else Object.assign(fields, { availableAt: outcome.availableAt }, queuePlacement(lease, outcome.availableAt, now));
  return settleOrFinishCancel(ctx, lease, new Expression().assign(fields));
}

/** Gives the task back without spending an attempt (a worker shutting down), at its old place in the queue. */
export async function release(ctx: StoreContext, rawInput: { lease: Lease }): Promise<Task> {
  const { lease } = parseInput(leaseOnlyInput, 'release', rawInput);
  const now = ctx.clock.now();
  const e = new Expression()
    .assign({ ...LEASE_FIELDS_CLEARED, status: TaskStatus.QUEUED, updatedAt: now, ...queuePlacement(lease, lease.availableAt, now) })
    .add('attempts', -1);
  return settleOrFinishCancel(ctx, lease, e);
}

/** The holder's answer to a cancel request: CANCELLED. */
export async function finishCancel(ctx: StoreContext, rawInput: { lease: Lease }): Promise<Task> {
  const { lease } = parseInput(leaseOnlyInput, 'finishCancel', rawInput);
  const now = ctx.clock.now();
  const e = new Expression()
    .require(hasStatus(TaskStatus.CANCEL_REQUESTED))
    .assign({ ...LEASE_FIELDS_CLEARED, status: TaskStatus.CANCELLED, updatedAt: now, ...finishedFields(now, ctx.config) });
  return settle(ctx, lease, e);
}

/** Where a requeued task goes: straight to the ready index when due, else to the delay partition until promoted. */
export function queuePlacement(task: Pick<Lease, 'type' | 'shard' | 'priority' | 'createdAt'> & { taskId: string }, availableAt: number, now: number): Record<string, unknown> {
  const readyPk = readyPartition(task.type, task.shard, task.priority);
  const readySk = readySortKey(task.priority, availableAt, task.createdAt, task.taskId);
  if (availableAt <= now) return { [INDEX.ready.partition]: readyPk, [INDEX.ready.sort]: readySk };
  return { [INDEX.sweep.partition]: delaySweepPartition(task.shard), [INDEX.sweep.sort]: availableAt, dueReadyPk: readyPk, dueReadySk: readySk };
}

async function settle(ctx: StoreContext, lease: Lease, e: Expression, seededBug = false): Promise<Task> {
  const item = await writeUnderLease(ctx, lease, e, { resends: 2 }, seededBug);
  // The outcome is written; a slot that cannot be given back now runs out with its lease instead.
  await releaseSlots(ctx, lease.owner, lease.slots).catch(() => undefined);
  return toTask(item);
}

/** Fail and release only apply to RUNNING; when a cancel was requested meanwhile, the task ends CANCELLED instead. */
async function settleOrFinishCancel(ctx: StoreContext, lease: Lease, e: Expression): Promise<Task> {
  try {
    return await settle(ctx, lease, e.require(hasStatus(TaskStatus.RUNNING)));
  } catch (error) {
    if (error instanceof LeaseLostError && error.current?.status === TaskStatus.CANCEL_REQUESTED && error.current.leaseToken === lease.token) {
      return finishCancel(ctx, { lease });
    }
    throw error;
  }
}
