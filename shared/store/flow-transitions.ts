/**
 * The edges of the state machine that flows add (flow-rules.ts), as data like every other edge
 * (transitions.ts). A waiting parent (WAITING_CHILDREN) is in no claim index: it sits in the lease
 * index under `LEASE#<shard>` at the time of recovery's next look at it (`sweepAt`), with no lease
 * fields, so the sweep that finds expired leases also finds parents whose children's counts a dead
 * writer left undone.
 */
import type { LeaseholdConfig } from '../config.js';
import { INDEX, leaseSweepPartition } from '../table-layout.js';
import { TaskStatus } from '../task-model.js';
import {
  childCountIs,
  childIsNew,
  childNotCounted,
  flowCheckAsSeen,
  parentLifeIs,
  hasStatus,
  itemIsNew,
  parentNotEnded,
  unchangedSince,
  waitsWithAllChildrenCounted,
} from './conditions.js';
import { finishedFields, type TaskItem } from './task-item.js';
import { storeError } from './body-layout.js';
import {
  fence,
  LEASE_LEFT,
  ownerKeys,
  readyKeys,
  type LeaseRef,
  type Place,
  type Transition,
} from './transitions.js';

/** Where a waiting parent is: the lease index of its shard, at its next look. */
const waitingAt = (shard: number, checkAt: number) => ({
  [INDEX.lease.partition]: leaseSweepPartition(shard),
  [INDEX.lease.sort]: checkAt,
});

/** Removed when a parent stops waiting (ready, failed by a child, cancelled): its place in the lease index. */
const WAITING_LEFT = { [INDEX.lease.partition]: undefined, [INDEX.lease.sort]: undefined } as const;

/**
 * A new task's put (enqueued, enqueuedWaiting) as a child's: it may replace a child of an earlier
 * life of its parent's id (childIsNew), where a task's own put needs the id free (itemIsNew).
 */
export function placedAsChild(placed: Transition, parentCreatedAt: number): Transition {
  return {
    ...placed,
    require: placed.require.map((p) => (p === itemIsNew ? childIsNew(parentCreatedAt) : p)),
  };
}

/**
 * A new task's put as the replacement of the expired record of its id (its key's retention is over,
 * TTL has not removed it yet): nobody wrote that record since it was read (unchangedSince).
 */
export function placedReplacing(placed: Transition, expired: Pick<TaskItem, 'writeId'>): Transition {
  return {
    ...placed,
    require: placed.require.map((p) => (p === itemIsNew ? unchangedSince(expired.writeId) : p)),
  };
}

/** A new parent with `children` children (a flow from the API): WAITING_CHILDREN, counting them down. */
export function enqueuedWaiting(
  task: Place & Pick<TaskItem, 'owner'>,
  children: number,
  now: number,
  checkAt: number,
): Transition {
  return {
    assign: {
      status: TaskStatus.WAITING_CHILDREN,
      ...ownerKeys(task),
      childCount: children,
      childrenPending: children,
      childBase: children,
      flowChecks: 0,
      waitingSince: now,
      ...waitingAt(task.shard, checkAt),
      updatedAt: now,
    },
    require: [itemIsNew],
  };
}

/**
 * The holder raises its parent's child count before writing the children it numbers (ctx.enqueueChildren):
 * a child that ends before the parent waits is counted against a count that already includes it.
 */
export function childrenRaised(lease: LeaseRef, from: number, to: number, now: number): Transition {
  return {
    assign: { childCount: to, updatedAt: now },
    add: { childrenPending: to - from },
    // RUNNING: a cancel requested before the raise reached no children (its cascade saw none), so none
    // may be raised after it; the holder finishes the cancel instead.
    require: [hasStatus(TaskStatus.RUNNING), childCountIs(from), fence(lease)],
  };
}

/**
 * The holder ends its attempt to wait for its children (ctx.waitForChildren): out of its lease, into
 * the waiting status, its attempt given back (a wait is not a failure). Its next attempt numbers new
 * children from `childCount` (childBase).
 */
export function waitingForChildren(
  lease: LeaseRef,
  childCount: number,
  now: number,
  checkAt: number,
): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      status: TaskStatus.WAITING_CHILDREN,
      childBase: childCount,
      flowChecks: 0,
      waitingSince: now,
      updatedAt: now,
      ...waitingAt(lease.shard, checkAt),
    },
    add: { attempts: -1 },
    require: [hasStatus(TaskStatus.RUNNING), fence(lease)],
  };
}

/**
 * A child's end counted on its parent, once (childNotCounted): one fewer pending, and a failure noted;
 * only on the parent's life the child was written for (parentLifeIs), when the child carries its mark.
 */
export function childCounted(
  index: number,
  failure: string | undefined,
  parentCreatedAt?: number,
): Transition {
  return {
    assign: failure === undefined ? {} : { childFailure: failure },
    add: { childrenPending: -1, ...(failure === undefined ? {} : { childFailures: 1 }) },
    addToSet: { childrenEnded: new Set([index]) },
    require: [
      parentNotEnded,
      childNotCounted(index),
      ...(parentCreatedAt === undefined ? [] : [parentLifeIs(parentCreatedAt)]),
    ],
  };
}

/** Every child counted, none failed it: QUEUED in the ready index, due now. */
export function parentReady(parent: Place, now: number): Transition {
  return {
    assign: {
      status: TaskStatus.QUEUED,
      availableAt: now,
      updatedAt: now,
      ...WAITING_LEFT,
      ...readyKeys(parent, now),
    },
    require: [waitsWithAllChildrenCounted],
  };
}

/** Every child counted, and one that is not optional failed: FAILED without running (CHILD_FAILED). */
export function parentFailedByChild(
  now: number,
  error: string,
  config: Pick<LeaseholdConfig, 'retentionDays'>,
): Transition {
  return {
    assign: {
      status: TaskStatus.FAILED,
      ...storeError(error).fields,
      updatedAt: now,
      ...WAITING_LEFT,
      ...finishedFields(now, config),
    },
    require: [waitsWithAllChildrenCounted],
  };
}

/** Recovery looked at a waiting parent (and counted what it found ended): its next look, backed off. */
export function flowChecked(sweepAt: number, nextAt: number): Transition {
  return {
    assign: { [INDEX.lease.sort]: nextAt },
    add: { flowChecks: 1 },
    require: [flowCheckAsSeen(sweepAt)],
  };
}

/** A user's cancel of a waiting parent: CANCELLED at once (its children are cancelled after: cancel.ts). */
export function cancelledWaiting(now: number, config: Pick<LeaseholdConfig, 'retentionDays'>): Transition {
  return {
    assign: {
      status: TaskStatus.CANCELLED,
      updatedAt: now,
      ...WAITING_LEFT,
      ...finishedFields(now, config),
    },
    require: [hasStatus(TaskStatus.WAITING_CHILDREN)],
  };
}
