/**
 * Every write made under a lease: renew, complete, fail, release, and the holder's side of a cancel.
 * Each is one conditional update on the claim's fencing token. A ConditionalCheckFailed is read back
 * (consistently) before it is called a lost lease: the SDK may have retried a write whose first
 * attempt applied and whose answer was lost.
 */
import { LeaseLostError } from '../errors.js';
import { decideFailure, leaseExpiry, sweepKeyAfterRenewal } from '../lease-rules.js';
import { taskKey } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate, type WriteOptions } from './conditional-write.js';
import { RENEWAL } from './lease-item.js';
import {
  completeInput,
  failInput,
  leaseOnlyInput,
  parseInput,
  releaseInput,
  renewInput,
  type Lease,
  type ProgressReport,
  type RenewInput,
} from '../task-inputs.js';
import type { FailInput } from '../task-inputs.js';
import { releaseSlots, renewSlots } from './slots.js';
import { bodyExpiry, outcomeSortKey, storeError, storeResult } from './body-layout.js';
import { expireBody, putBody } from './task-body.js';
import { extendPayload, payloadExtension } from './payload-lifetime.js';
import { CostCount, countCost } from './cost-meter.js';
import { addCost } from './task-cost.js';
import { leaseIndexItem, recordingCost } from './recorded-cost.js';
import { toTask, type TaskItem } from './task-item.js';
import { countChildEnd } from './child-ends.js';
import {
  asUpdate,
  cancelledRunning,
  completed,
  failedFinal,
  failedRetry,
  released,
  renewed,
  type Transition,
} from './transitions.js';

export type RenewOutcome =
  | { taskId: string; outcome: 'renewed'; lease: Lease }
  | { taskId: string; outcome: 'cancel-requested'; lease: Lease }
  | { taskId: string; outcome: 'lost'; current: Task | undefined }
  | { taskId: string; outcome: 'error'; error: unknown };

/**
 * Sends one edge taken under the lease (its last condition part is the fence); returns the item after
 * it, or throws LeaseLostError. The primitive settles lost answers (resent under the same write id,
 * read back when refused).
 */
export async function writeUnderLease(
  ctx: StoreContext,
  lease: Lease,
  t: Transition,
  options: WriteOptions,
): Promise<TaskItem> {
  const written = await conditionalUpdate<TaskItem>(writeTargetOf(ctx), taskKey(lease.taskId), asUpdate(t), {
    ...options,
    needCurrent: true,
  });
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
      // What the renewal costs travels with the lease to the outcome write, which records it: a
      // renewal cannot ADD to the task's cost, since a resend after a lost answer would apply twice.
      const count = new CostCount();
      try {
        // Slots first: a task lease must never outlive the slot that admits it.
        const slotsHeld = await countCost(
          count,
          async () => lease.slots.length === 0 || renewSlots(ctx, lease.owner, lease.slots, leaseUntil),
        );
        if (!slotsHeld) return { taskId: lease.taskId, outcome: 'lost', current: undefined };
        const sweepAt = sweepKeyAfterRenewal(lease.sweepAt, leaseUntil, ctx.config);
        const item = await countCost(count, () =>
          writeUnderLease(
            ctx,
            lease,
            renewed(lease, leaseUntil, sweepAt, input.progress?.[lease.taskId]),
            RENEWAL,
          ),
        );
        ctx.heldItems.set(item);
        const next: Lease = {
          ...lease,
          leaseUntil,
          sweepAt: sweepAt ?? lease.sweepAt,
          slots: lease.slots.map((s) => ({ ...s, leaseUntil })),
          // A moved sweep key is two index writes (the old entry deleted, the new one put).
          unrecorded: addCost(lease.unrecorded, count.snapshot(), {
            indexWriteUnits: sweepAt === undefined ? 0 : 2,
          }),
        };
        return {
          taskId: lease.taskId,
          outcome: item.status === TaskStatus.CANCEL_REQUESTED ? 'cancel-requested' : 'renewed',
          lease: next,
        };
      } catch (error) {
        if (error instanceof LeaseLostError)
          return { taskId: lease.taskId, outcome: 'lost', current: error.current };
        return { taskId: lease.taskId, outcome: 'error', error };
      }
    }),
  );
}

/** Records success. Allowed while a cancel is pending: the work is done, and SUCCESS says so. */
export async function complete(
  ctx: StoreContext,
  rawInput: { lease: Lease; result?: unknown },
): Promise<Task> {
  const { lease, result } = parseInput(completeInput, 'complete', rawInput);
  const now = ctx.clock.now();
  const stored = storeResult(JSON.stringify(result ?? null), lease.token);
  const apart = await writeApart(ctx, lease, stored.apart, now);
  const task = await settle(ctx, apart, completed(lease, now, stored.fields, ctx.config));
  // The holder knows the result it wrote, wherever it was kept.
  return { ...task, result: result ?? null };
}

/** Records a failed attempt: back to the queue after a backoff while attempts remain, else FAILED. */
export async function fail(ctx: StoreContext, rawInput: FailInput): Promise<Task> {
  const input = parseInput(failInput, 'fail', rawInput);
  const { lease } = input;
  const now = ctx.clock.now();
  const policy = input.backoff ?? { baseMs: ctx.config.backoffBaseMs, maxMs: ctx.config.backoffMaxMs };
  const outcome = decideFailure(lease, now, input.retryable, policy, ctx.random);
  const error = storeError(input.error, lease.token);
  const held = ctx.heldItems.peek(lease.taskId, lease.token);
  // An earlier attempt's error kept apart, which this one's replaces on the task.
  const earlierError = held?.errorToken;
  const apart = await writeApart(ctx, lease, error.apart, now);
  const t =
    outcome.status === TaskStatus.FAILED
      ? failedFinal(lease, now, error.fields, ctx.config, input.progress)
      : failedRetry(
          lease,
          now,
          outcome.availableAt,
          error.fields,
          input.progress,
          await payloadForBackoff(ctx, held, now, outcome.availableAt),
        );
  let task: Task;
  try {
    task = await settle(ctx, apart, t);
  } catch (error) {
    // Ended CANCELLED instead: that write keeps the earlier error, which stays named.
    if (cancelledMeanwhile(error, lease)) return finishCancel(ctx, { lease });
    throw error;
  }
  // Named by nothing now: marked for TTL so no read or partition keeps it. Best effort: the outcome stands.
  if (earlierError !== undefined && earlierError !== lease.token)
    await expireBody(ctx, lease.taskId, outcomeSortKey(earlierError), 'lease').catch(() => undefined);
  return task;
}

/** Gives the task back without spending an attempt (a worker shutting down), at its old place in the queue. */
export async function release(
  ctx: StoreContext,
  rawInput: { lease: Lease; progress?: ProgressReport },
): Promise<Task> {
  const { lease, progress } = parseInput(releaseInput, 'release', rawInput);
  const now = ctx.clock.now();
  return settleOrFinishCancel(ctx, lease, released(lease, now, progress));
}

/** The holder's answer to a cancel request: CANCELLED. */
export async function finishCancel(ctx: StoreContext, rawInput: { lease: Lease }): Promise<Task> {
  const { lease } = parseInput(leaseOnlyInput, 'finishCancel', rawInput);
  const now = ctx.clock.now();
  return settle(ctx, lease, cancelledRunning(lease, now, ctx.config));
}

/**
 * A result or error too large for the task item, into the OUTCOME item of this lease's token, before
 * the outcome write that names it (body-layout.ts): readers never see a token whose item is missing.
 * Returns the lease with that write's cost added, for the outcome write to record.
 */
async function writeApart(
  ctx: StoreContext,
  lease: Lease,
  apart: { result: string } | { error: string } | undefined,
  now: number,
): Promise<Lease> {
  if (apart === undefined) return lease;
  const count = new CostCount();
  await countCost(count, () =>
    putBody(ctx, lease.taskId, outcomeSortKey(lease.token), apart, bodyExpiry(now, ctx.config), 'lease'),
  );
  return { ...lease, unrecorded: addCost(lease.unrecorded, count.snapshot()) };
}

/**
 * The outcome write of an attempt: it records on the task what the attempt cost (its claim, renewals,
 * handler time and result item, carried by the lease) and itself, priced from the item the last write
 * under this lease returned (recorded-cost.ts).
 */
async function settle(ctx: StoreContext, lease: Lease, t: Transition): Promise<Task> {
  return toTask(await settleUnderLease(ctx, lease, t));
}

/** settle(), answering the item after the write (a parent's wait goes on from it: children.ts). */
export async function settleUnderLease(ctx: StoreContext, lease: Lease, t: Transition): Promise<TaskItem> {
  const held = ctx.heldItems.take(lease.taskId, lease.token);
  const recorded = recordingCost(t, held ?? leaseIndexItem(lease), lease.unrecorded, held !== undefined);
  const item = await writeUnderLease(ctx, lease, recorded, { resends: 2 });
  // The outcome is written; a slot that cannot be given back now runs out with its lease instead.
  await releaseSlots(ctx, lease.owner, lease.slots).catch(() => undefined);
  // A child's end counts on its parent. Best effort: a count not made is made by recovery's look at
  // the waiting parent (child-ends.ts), and the outcome stands either way.
  if (item.parentId !== undefined) await countChildEnd(ctx, item).catch(() => undefined);
  return item;
}

/** Fail and release only apply to RUNNING (their edges say so); when a cancel was requested meanwhile, the task ends CANCELLED instead. */
async function settleOrFinishCancel(ctx: StoreContext, lease: Lease, t: Transition): Promise<Task> {
  try {
    return await settle(ctx, lease, t);
  } catch (error) {
    if (cancelledMeanwhile(error, lease)) return finishCancel(ctx, { lease });
    throw error;
  }
}

/**
 * A backoff that makes the task due past its payload's TTL moves that TTL first: the new TTL for the
 * outcome write to record, or undefined. Best effort: the outcome write must not wait on it. Without
 * the held item (more leases than it keeps), or when the move fails, payloadUntil stays as it was, so
 * the next write that makes the task due (an API retry) moves it; a payload already gone stays gone
 * and the claim fails the task PAYLOAD_MISSING, as before.
 */
async function payloadForBackoff(
  ctx: StoreContext,
  held: TaskItem | undefined,
  now: number,
  availableAt: number,
): Promise<number | undefined> {
  const until = held && payloadExtension(held, now, availableAt, ctx.config);
  if (!held || until === undefined) return undefined;
  return extendPayload(ctx, held, until, 'lease').then(
    () => until,
    () => undefined,
  );
}

/** The outcome write was refused because a cancel was requested under this same lease. */
export function cancelledMeanwhile(error: unknown, lease: Lease): boolean {
  return (
    error instanceof LeaseLostError &&
    error.current?.status === TaskStatus.CANCEL_REQUESTED &&
    error.current.leaseToken === lease.token
  );
}
