/**
 * One claim write and what follows it: the slots its type needs, the conditional write, the payload's
 * read, the undo of a claim whose outcome was never learned. Each ends in an Attempt and never throws:
 * the round (claim-round.ts) decides what to do with it.
 */
import { claimLeaseUsable, leaseExpiry } from '../lease-rules.js';
import { delaySweepPartition, shardForId, taskKey } from '../table-layout.js';
import type { Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import {
  conditionalUpdate,
  WriteOutcomeUnknownError,
  type WriteOptions,
  type WriteResult,
} from './conditional-write.js';
import type { Lease, SlotLease } from '../task-inputs.js';
import type { Candidate, UnknownClaim } from './claim-state.js';
import { fail, release } from './lease-writes.js';
import { releaseSlots, type SlotGate } from './slots.js';
import type { RateTake } from './rate-tokens.js';
import { giveBackGroupSlot, takeGroupSlot, type GroupTake } from './group-slots.js';
import { isGroupRotation } from '../group-rules.js';
import { readPayload } from './task-body.js';
import { CostCount, countCost } from './cost-meter.js';
import { addCost } from './task-cost.js';
import { toTask, type TaskItem } from './task-item.js';
import { readTaskItem } from './task-reads.js';
import { deadline } from './dynamo.js';
import {
  asUpdate,
  claimed as claimEdge,
  claimedWhenDue,
  claimUndone,
  dueClaimUndone,
  type Transition,
} from './transitions.js';

export interface Claimed {
  task: Task;
  lease: Lease;
  /**
   * A parent's children as the claim found them: how many, and the number its handler's
   * ctx.enqueueChildren starts from this round (an attempt retried before it waited meets the children
   * the earlier one wrote: flow-transitions.ts waitingForChildren).
   */
  family?: { count: number; base: number };
}

export type Attempt =
  | { outcome: 'won'; claimed: Claimed }
  /**
   * Another claimer won. The refused write is billed, but it was on another task's item, often another
   * owner's: it is the type's contention, counted as a lost race, never charged to a task.
   */
  | { outcome: 'lost' }
  | { outcome: 'late' }
  /** Won, but its payload is gone: the task was failed (PAYLOAD_MISSING), not run. */
  | { outcome: 'dropped' }
  | { outcome: 'limited' }
  /** Its group runs as many as its `groupConcurrency` allows: the group waits, the type does not. */
  | { outcome: 'busy' }
  | { outcome: 'error'; error: unknown };

export type OnUnknownClaim = (unknown: UnknownClaim) => void;

/**
 * One claim write: the slots its type needs first (none for a due claim, whose condition excludes
 * limited types), its edge, and what to remember if its outcome is never learned.
 */
interface ClaimWrite {
  taskId: string;
  slotsOf?: string;
  /** The claim's `startedAt`: a rate-limit token is taken at this very time. */
  startAt: number;
  edge: Transition;
  /** A grouped head: a slot of its group is taken first, and the claim written with the slot's claim id. */
  group?: {
    rotation: string;
    /** The claim's edge once its group's slot is taken: its start and lease run from then. */
    edgeWith: (groupClaim: string, now: number, leaseUntil: number) => Transition;
  };
  unknown: Omit<UnknownClaim, 'writeId' | 'leaseUntil'>;
}

/** The claim of a ready head, as read. */
export function headClaim(
  c: Candidate,
  workerId: string,
  now: number,
  leaseUntil: number,
  config: StoreContext['config'],
): ClaimWrite {
  const rotation = c.rotation;
  return {
    taskId: c.id,
    slotsOf: c.type,
    startAt: now,
    edge: claimEdge(c, workerId, now, leaseUntil, config),
    ...(rotation !== undefined && isGroupRotation(rotation)
      ? {
          group: {
            rotation,
            edgeWith: (claimId, at, until) => claimEdge(c, workerId, at, until, config, claimId),
          },
        }
      : {}),
    unknown: { candidate: c },
  };
}

/** The claim of a due delayed task straight from its delay partition. */
export function dueClaim(
  id: string,
  types: readonly string[],
  workerId: string,
  now: number,
  leaseUntil: number,
  config: StoreContext['config'],
): ClaimWrite {
  const shard = shardForId(id);
  return {
    taskId: id,
    startAt: now,
    edge: claimedWhenDue(
      { shard, delayPartition: delaySweepPartition(shard) },
      types,
      workerId,
      now,
      leaseUntil,
      config,
    ),
    unknown: { dueTaskId: id },
  };
}

/**
 * One claim: its slots, its conditional write, the payload's read, and every way it can end (never
 * throws). What its requests cost goes with the lease (`unrecorded`) to the next write of the task.
 */
export async function claimOne(
  ctx: StoreContext,
  write: ClaimWrite,
  leaseUntil: number,
  gate: SlotGate,
  onUnknown: OnUnknownClaim,
): Promise<Attempt> {
  const count = new CostCount();
  const attempt = await countCost(count, () => claimWrite(ctx, write, leaseUntil, gate, onUnknown));
  if (attempt.outcome === 'lost') return { outcome: 'lost' };
  if (attempt.outcome !== 'taken') return attempt;
  ctx.heldItems.set(attempt.item);
  const claimed: Claimed = {
    ...attempt.claimed,
    // A claim moves the task's index entry: out of the ready index (or a delay partition) into the lease sweep.
    lease: {
      ...attempt.claimed.lease,
      unrecorded: addCost(count.snapshot(), { indexWriteUnits: CLAIM_INDEX_WRITES }),
    },
  };
  return withPayload(ctx, claimed, attempt.item);
}

/** A claim's index writes: its entry leaves one index (ready, or delays) for the lease index. */
const CLAIM_INDEX_WRITES = 2;

/** The claim itself: slots, then the conditional write. */
async function claimWrite(
  ctx: StoreContext,
  write: ClaimWrite,
  readLeaseUntil: number,
  gate: SlotGate,
  onUnknown: OnUnknownClaim,
): Promise<Exclude<Attempt, { outcome: 'won' }> | { outcome: 'taken'; claimed: Claimed; item: TaskItem }> {
  let slots: SlotLease[] = [];
  let start: RateTake | undefined;
  let groupSlot: GroupTake | undefined;
  let leaseUntil = readLeaseUntil;
  let startAt = write.startAt;
  // What a claim that did not apply gives back: its group's slot, its start, its slots.
  const giveBack = async () => {
    if (groupSlot) await giveBackGroupSlot(ctx, groupSlot);
    if (start) await gate.rates.giveBack(start);
    await releaseSlots(ctx, gate.holder, slots);
  };
  try {
    if (write.group && write.slotsOf !== undefined) {
      // The group's slot first: a busy group then costs no concurrency slot or rate start.
      groupSlot = await takeGroupSlot(ctx, write.slotsOf, write.group.rotation, write.taskId, gate.holder);
      if (!groupSlot) return { outcome: 'busy' };
      // The start and the lease run from now, after the slot's reads: a start recorded before it would
      // seem to overlap the group's previous run, whose end that slot read saw.
      startAt = ctx.clock.now();
      leaseUntil = leaseExpiry(startAt, ctx.config);
    }
    if (write.slotsOf !== undefined) {
      const taken = await gate.acquire(write.slotsOf, write.taskId, leaseUntil);
      if (!taken) {
        await giveBack();
        return { outcome: 'limited' };
      }
      slots = taken;
      // The rate limit's start after the slots: a start is spent only on a claim that has its slots.
      const rate = await gate.rates.take(write.slotsOf, write.taskId, startAt);
      if (rate === 'none') {
        await giveBack();
        return { outcome: 'limited' };
      }
      start = rate;
    }
  } catch (error) {
    await giveBack().catch(() => undefined);
    return { outcome: 'error', error };
  }
  const edge =
    groupSlot && write.group ? write.group.edgeWith(groupSlot.claimId, startAt, leaseUntil) : write.edge;
  ctx.events.emit('claim:intent', { taskId: write.taskId });
  let written: WriteResult<TaskItem>;
  try {
    written = await conditionalUpdate<TaskItem>(writeTargetOf(ctx), taskKey(write.taskId), asUpdate(edge), {
      resends: 1,
    });
  } catch (error) {
    // Not even a read could tell whether the claim applied: take it back if it did, so the task
    // is not left RUNNING under a worker that never runs it, with an attempt spent.
    // If the undo fails too, the next rounds try it again.
    if (error instanceof WriteOutcomeUnknownError) {
      const unknown = { ...write.unknown, writeId: error.writeId, leaseUntil } as UnknownClaim;
      await undoClaim(ctx, unknown).catch(() => onUnknown(unknown));
    }
    // The group's slot is kept: if the claim applied and its undo failed, the task shows RUNNING under
    // it, and the slot is freed by the task (its recovery), not by a give-back that would let a second run.
    await releaseSlots(ctx, gate.holder, slots).catch(() => undefined);
    return { outcome: 'error', error };
  }
  try {
    if (!written.applied) {
      // Not started: its start goes back to the budget, so contention does not spend it.
      await giveBack();
      return { outcome: 'lost' };
    }
    const claimed = claimedFrom(written.item, slots);
    if (!claimLeaseUsable(claimed.lease.leaseUntil, ctx.clock.now(), ctx.config)) {
      // The write landed too late to start safely: another claimer may take over the task and its
      // slots any moment. Give it back (attempt not spent); if recovery already requeued it, the
      // release is refused by its token and nothing changes.
      await release(ctx, { lease: claimed.lease }).catch(() => undefined);
      // Not a race with another claimer: it must not make this worker act contended.
      return { outcome: 'late' };
    }
    return { outcome: 'taken', claimed, item: written.item };
  } catch (error) {
    return { outcome: 'error', error };
  }
}

/**
 * A won claim with its payload: read from the payload's own item when it did not fit in the task item
 * (task-body.ts), once per claim. A read that fails gives the task back (attempt not spent); a payload
 * that is gone (past `maxWaitDays`, or an enqueue that died between its two writes) fails the task
 * for good, since it can never run as it was asked.
 */
async function withPayload(ctx: StoreContext, claimed: Claimed, item: TaskItem): Promise<Attempt> {
  if (item.payloadBytes === undefined) return { outcome: 'won', claimed };
  let payload: string | undefined;
  const count = new CostCount();
  let lease = claimed.lease;
  try {
    payload = await countCost(count, () => readPayload(ctx, item, deadline(ctx.config.requestDeadlineMs)));
    lease = { ...lease, unrecorded: addCost(lease.unrecorded, count.snapshot()) };
  } catch (error) {
    await release(ctx, { lease }).catch(() => undefined);
    return { outcome: 'error', error };
  }
  if (payload === undefined) {
    await fail(ctx, { lease, error: payloadMissing(ctx, item), retryable: false }).catch(() => undefined);
    return { outcome: 'dropped' };
  }
  return { outcome: 'won', claimed: { ...claimed, lease, task: toTask(item, { ...item, payload }) } };
}

const payloadMissing = (ctx: StoreContext, item: TaskItem) =>
  `PAYLOAD_MISSING: the payload of task ${item.id} is gone: a task keeps its payload ${ctx.config.maxWaitDays} days ` +
  `(LEASEHOLD_MAX_WAIT_DAYS) after its due time plus its retention, or its enqueue failed between its two writes. Enqueue it again.`;

/**
 * Reverts a claim that may have applied (our write id is on the item), attempt given back: a ready head
 * goes back to that head; a due delayed task, read back first for the keys of its place, to the ready
 * index (it is due). Another write since (or none of ours) leaves the task as it is.
 */
export async function undoClaim(
  ctx: StoreContext,
  unknown: UnknownClaim,
  options: WriteOptions = {},
): Promise<void> {
  if ('candidate' in unknown) {
    await conditionalUpdate(
      writeTargetOf(ctx),
      taskKey(unknown.candidate.id),
      asUpdate(claimUndone(unknown.candidate, unknown.writeId)),
      options,
    );
    return;
  }
  const item = await readTaskItem(ctx, unknown.dueTaskId, deadline(ctx.config.requestDeadlineMs));
  if (item?.writeId !== unknown.writeId) return;
  await conditionalUpdate(
    writeTargetOf(ctx),
    taskKey(unknown.dueTaskId),
    asUpdate(dueClaimUndone(item, unknown.writeId, ctx.clock.now())),
    options,
  );
}

function claimedFrom(item: TaskItem, slots: SlotLease[]): Claimed {
  return {
    // With what the item holds inline; a payload kept apart is read next (withPayload).
    task: toTask(item, item),
    lease: {
      taskId: item.id,
      type: item.type,
      owner: item.leaseOwner!,
      token: item.leaseToken,
      leaseUntil: item.leaseUntil!,
      sweepAt: item.sweepAt!,
      shard: item.shard,
      ...(item.rotation === undefined ? {} : { rotation: item.rotation }),
      priority: item.priority,
      createdAt: item.createdAt,
      availableAt: item.availableAt,
      attempts: item.attempts,
      maxAttempts: item.maxAttempts,
      slots,
    },
    ...(item.childCount === undefined
      ? {}
      : { family: { count: item.childCount, base: item.childBase ?? 0 } }),
  };
}
