/**
 * Every edge of the task state machine, as data: the attributes a write assigns (status, index
 * membership, lease fields, finish time and TTL) and the named condition parts (conditions.ts) it
 * needs. Pure, in the spirit of lease-rules.ts: no I/O and no clock reads, every edge takes `now`
 * from its caller. A store operation reads its inputs, asks lease-rules.ts what to do, takes the edge
 * here and sends it with conditionalUpdate / conditionalPut (conditional-write.ts).
 *
 * Index invariant (each edge keeps it; test/transitions.test.ts checks it on arbitrary states):
 * - A QUEUED task is in exactly one of two places, and has no lease fields (leaseOwner, leaseUntil):
 *   - the ready index: `readyPk` = readyPartition(type, shard, priority),
 *     `readySk` = readySortKey(priority, availableAt, createdAt, id);
 *   - the delay index: `delayPk` = `DELAY#<shard>`, `delayAt` = availableAt, carrying the ready keys
 *     it takes when promoted (`dueReadyPk`, `dueReadySk`, the same values).
 *   A write that queues a task files it in the ready index when it is due at that write's `now`
 *   (availableAt <= now), else in the delay index; a delayed task stays there past its due time
 *   until a promotion (by key, or by recovery's sweep) moves it to the ready index.
 * - A leased task (RUNNING, CANCEL_REQUESTED) is in the lease index only: `sweepPk` = `LEASE#<shard>`,
 *   leaseUntil <= `sweepAt` <= leaseUntil + sweepSlackMs (lease-rules.ts), with leaseOwner and leaseUntil.
 * - A parent waiting for its children (WAITING_CHILDREN, flow-transitions.ts) is in the lease index only,
 *   with no lease fields: `sweepPk` = `LEASE#<shard>`, `sweepAt` = recovery's next look at it.
 * - A terminal task (SUCCESS, FAILED, CANCELLED) is in neither index, has no lease fields, and has
 *   finishedAt and its TTL (`expiresAt`, epoch seconds, from finishedFields).
 * - Every task is in the owner index (`ownerPk` = one of its owner's shards, from its id; `ownerSk`);
 *   its keys are written once, at enqueue.
 */
import type { LeaseholdConfig } from '../config.js';
import { sweepKeyFor } from '../lease-rules.js';
import {
  delaySweepPartition,
  INDEX,
  leaseSweepPartition,
  ownerSortKey,
  priorityOfReadySortKey,
  taskOwnerPartitionOf,
  readyPartition,
  readySortKey,
  rotationPartitionOf,
  TTL_ATTRIBUTE,
} from '../table-layout.js';
import { rotationSortKey } from '../group-rules.js';
import { TaskStatus } from '../task-model.js';
import type { Candidate } from './claim-state.js';
import {
  hasAttemptsLeft,
  hasDefaultPriority,
  groupClaimNotVoided,
  hasStatus,
  holdsLease,
  isNotRotated,
  neverStarted,
  itemIsNew,
  leaseAsObserved,
  stillDelayedAndDue,
  stillInLegacyDelay,
  stillQueuedAt,
  typeIsOneOf,
  unchangedSince,
} from './conditions.js';
import type { Lease, ProgressReport } from '../task-inputs.js';
import { finishedFields, type TaskItem } from './task-item.js';
import { storeError, type StoredError, type StoredResult } from './body-layout.js';
import { Expression, type ConditionPart } from './update-expression.js';

/** One edge: what the write does to the item, and what must hold for it to apply. */
export interface Transition {
  /** SET each defined entry, REMOVE each undefined one. */
  assign: Record<string, unknown>;
  /** SET target = source, copied inside DynamoDB without a read (promotion). */
  copy?: Record<string, string>;
  /** ADD: counters moved inside DynamoDB (the fencing token, attempts). */
  add?: Record<string, number>;
  /** ADD: numbers into a number set (a parent's counted children: flow-transitions.ts). */
  addToSet?: Record<string, Set<number>>;
  /** The named condition parts, all of which must hold. Under a lease the fence (holdsLease) is always last. */
  require: ConditionPart[];
}

/** The ready keys a delayed task carries until it is promoted (copied into readyPk/readySk without a read). */
export const DUE_READY = { partition: 'dueReadyPk', sort: 'dueReadySk' } as const;

export type Place = Pick<TaskItem, 'id' | 'type' | 'shard' | 'priority' | 'createdAt' | 'rotation'>;
/** What a lease carries to place its task without a read, and its fence. */
export type LeaseRef = Pick<
  Lease,
  'taskId' | 'type' | 'shard' | 'priority' | 'createdAt' | 'availableAt' | 'owner' | 'token' | 'rotation'
>;
/** A leased task as recovery read it back. */
export type ObservedLease = Place &
  Pick<
    TaskItem,
    'availableAt' | 'status' | 'leaseToken' | 'leaseUntil' | 'leaseOwner' | 'attempts' | 'maxAttempts'
  >;

// --- the edges, in the order a task meets them ---

/** A new task's keys in the owner index, written once, at enqueue. */
export const ownerKeys = (task: Pick<TaskItem, 'id' | 'owner' | 'createdAt'>) => ({
  [INDEX.owner.partition]: taskOwnerPartitionOf(task.owner, task.id),
  [INDEX.owner.sort]: ownerSortKey(task.createdAt, task.id),
});

/** A new task (or one replacing an expired record of the same idempotent id, read a moment ago): QUEUED, ready when due, else delayed. */
export function enqueued(
  task: Place & Pick<TaskItem, 'availableAt' | 'owner'>,
  now: number,
  replacing?: Pick<TaskItem, 'writeId'>,
): Transition {
  return {
    assign: {
      status: TaskStatus.QUEUED,
      ...ownerKeys(task),
      ...queuedAt(task, task.availableAt, now),
    },
    require: [replacing ? unchangedSince(replacing.writeId) : itemIsNew],
  };
}

/**
 * A debounce join: the waiting task takes the newest enqueue's payload and is due `availableAt`
 * (windowMs after it), in the delay index (out of the ready index if it was there), only if it never
 * started (neverStarted).
 */
export function debounceJoined(
  task: Place & Pick<TaskItem, 'writeId'>,
  payload: Record<string, unknown>,
  availableAt: number,
  now: number,
): Transition {
  return {
    assign: {
      ...payload,
      availableAt,
      updatedAt: now,
      [INDEX.ready.partition]: undefined,
      [INDEX.ready.sort]: undefined,
      ...queuedAt(task, availableAt, now),
    },
    // unchangedSince: the task is as this join read it, so a resend of an earlier join whose answer
    // was lost cannot apply after a later one and bring back an older payload.
    require: [neverStarted, unchangedSince(task.writeId)],
  };
}

/** A claim of the head a worker read: RUNNING under a fresh token, out of the ready index, into the lease index. */
export function claimed(
  c: Candidate,
  workerId: string,
  now: number,
  leaseUntil: number,
  config: Pick<LeaseholdConfig, 'leaseTimeoutMs' | 'heartbeatIntervalMs' | 'clockSkewMs'>,
  /** The group slot's claim id, when a group slot admitted this claim (group-slots.ts). */
  groupClaim?: string,
): Transition {
  return {
    assign: {
      ...leaseTaken(c.shard, workerId, now, leaseUntil, config),
      [INDEX.ready.partition]: undefined,
      [INDEX.ready.sort]: undefined,
      ...(groupClaim === undefined ? {} : { groupClaim }),
    },
    add: { leaseToken: 1, attempts: 1 },
    require: [
      stillQueuedAt(c.readySk),
      hasAttemptsLeft,
      ...(groupClaim === undefined ? [] : [groupClaimNotVoided(groupClaim)]),
    ],
  };
}

/**
 * A claim of a due delayed task straight from its delay partition, as the worker found it there (keys
 * only: its id, so its shard, and the partition): RUNNING under a fresh token, out of the delay index into
 * the lease index, its due ready keys dropped. It saves the promotion write and the ready read; the
 * conditions leave every task it must not take (another type, a limited one, a priority other than the
 * default) to its promotion.
 */
export function claimedWhenDue(
  entry: { shard: number; delayPartition: string },
  types: readonly string[],
  workerId: string,
  now: number,
  leaseUntil: number,
  config: Pick<LeaseholdConfig, 'leaseTimeoutMs' | 'heartbeatIntervalMs' | 'clockSkewMs'>,
): Transition {
  return {
    assign: {
      ...leaseTaken(entry.shard, workerId, now, leaseUntil, config),
      ...DELAY_LEFT,
    },
    add: { leaseToken: 1, attempts: 1 },
    require: [
      stillDelayedAndDue(entry.delayPartition, now),
      hasDefaultPriority,
      isNotRotated,
      typeIsOneOf(types),
      hasAttemptsLeft,
    ],
  };
}

/**
 * Reverts a claim of a due delayed task whose outcome was never learned, if that very write applied
 * (read back: the item as it is now): QUEUED in the ready index (it is due), attempt given back.
 */
export function dueClaimUndone(
  task: Place & Pick<TaskItem, 'availableAt'>,
  writeId: string,
  now: number,
): Transition {
  return {
    assign: { ...LEASE_LEFT, status: TaskStatus.QUEUED, ...queuedAt(task, task.availableAt, now) },
    add: { attempts: -1 },
    require: [unchangedSince(writeId)],
  };
}

/** Reverts a claim whose outcome was never learned, if that very write applied: QUEUED at its old head, attempt given back. */
export function claimUndone(c: Candidate, writeId: string): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      status: TaskStatus.QUEUED,
      [INDEX.ready.partition]:
        c.rotation === undefined
          ? readyPartition(c.type, c.shard, priorityOfReadySortKey(c.readySk))
          : rotationPartitionOf(c.type, c.rotation),
      [INDEX.ready.sort]: c.readySk,
    },
    add: { attempts: -1 },
    require: [unchangedSince(writeId)],
  };
}

/**
 * Not an edge of the state machine but of the layout: a delayed task written before delays had their
 * own index (under `DELAY#<shard>` in the lease index's keys) into the delay index, same partition and
 * due time, without a read. Its status, attempts and ready keys stay as they are.
 */
export function movedFromLegacyDelay(partition: string, at: number): Transition {
  return {
    assign: {
      [INDEX.lease.partition]: undefined,
      [INDEX.lease.sort]: undefined,
      [INDEX.delay.partition]: partition,
      [INDEX.delay.sort]: at,
    },
    require: [stillInLegacyDelay(partition, at)],
  };
}

/** A heartbeat: the lease moves; the sweep key only when the new lease outruns it (`sweepAt` from sweepKeyAfterRenewal). */
export function renewed(
  lease: LeaseRef,
  leaseUntil: number,
  sweepAt: number | undefined,
  progress?: ProgressReport,
): Transition {
  return {
    assign: {
      leaseUntil,
      ...(sweepAt === undefined ? {} : { [INDEX.lease.sort]: sweepAt }),
      ...progressFields(progress),
    },
    require: [fence(lease)],
  };
}

/**
 * Success, recorded by the holder (also while a cancel is pending: the work is done). `result`: the
 * JSON text inline, or the token of the OUTCOME item holding it (body-layout.ts storeResult).
 */
export function completed(
  lease: LeaseRef,
  now: number,
  result: StoredResult['fields'],
  config: Pick<LeaseholdConfig, 'retentionDays'>,
): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      status: TaskStatus.SUCCESS,
      ...result,
      updatedAt: now,
      ...finishedFields(now, config),
    },
    require: [fence(lease)],
  };
}

/** A failed attempt with attempts left: back to the queue at `availableAt` (after the backoff decideFailure chose). */
export function failedRetry(
  lease: LeaseRef,
  now: number,
  availableAt: number,
  error: StoredError['fields'],
  progress?: ProgressReport,
  /** The payload item's new TTL, when the backoff had to move it (payload-lifetime.ts). */
  payloadUntil?: number,
): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      ...progressFields(progress),
      ...error,
      ...(payloadUntil === undefined ? {} : { payloadUntil }),
      updatedAt: now,
      status: TaskStatus.QUEUED,
      availableAt,
      ...queuedAt(placeOf(lease), availableAt, now),
    },
    require: [hasStatus(TaskStatus.RUNNING), fence(lease)],
  };
}

/** A failed last attempt, or a failure that must not be retried: FAILED. */
export function failedFinal(
  lease: LeaseRef,
  now: number,
  error: StoredError['fields'],
  config: Pick<LeaseholdConfig, 'retentionDays'>,
  progress?: ProgressReport,
): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      ...progressFields(progress),
      ...error,
      updatedAt: now,
      status: TaskStatus.FAILED,
      ...finishedFields(now, config),
    },
    require: [hasStatus(TaskStatus.RUNNING), fence(lease)],
  };
}

/** Given back by its holder without spending an attempt (a worker shutting down), at its old place in the queue. */
export function released(lease: LeaseRef, now: number, progress?: ProgressReport): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      ...progressFields(progress),
      status: TaskStatus.QUEUED,
      updatedAt: now,
      ...queuedAt(placeOf(lease), lease.availableAt, now),
    },
    add: { attempts: -1 },
    require: [hasStatus(TaskStatus.RUNNING), fence(lease)],
  };
}

/** A user's cancel of a RUNNING task: its holder keeps the lease until it finishes the cancel. */
export function cancelRequested(now: number): Transition {
  return {
    assign: { updatedAt: now, status: TaskStatus.CANCEL_REQUESTED },
    require: [hasStatus(TaskStatus.RUNNING)],
  };
}

/** A user's cancel of a QUEUED task (due or delayed): CANCELLED at once, out of both indexes. */
export function cancelledQueued(now: number, config: Pick<LeaseholdConfig, 'retentionDays'>): Transition {
  return {
    assign: {
      updatedAt: now,
      status: TaskStatus.CANCELLED,
      ...finishedFields(now, config),
      [INDEX.ready.partition]: undefined,
      [INDEX.ready.sort]: undefined,
      ...DELAY_LEFT,
      // A task an earlier version delayed still waits under the lease index's keys until it is moved
      // (legacy-delays.ts): cancelled, it leaves that index too, so no later retry can be moved twice.
      [INDEX.lease.partition]: undefined,
      [INDEX.lease.sort]: undefined,
    },
    require: [hasStatus(TaskStatus.QUEUED)],
  };
}

/** The holder's answer to a cancel request (finishCancel): CANCELLED. */
export function cancelledRunning(
  lease: LeaseRef,
  now: number,
  config: Pick<LeaseholdConfig, 'retentionDays'>,
): Transition {
  return {
    assign: { ...LEASE_LEFT, status: TaskStatus.CANCELLED, updatedAt: now, ...finishedFields(now, config) },
    require: [hasStatus(TaskStatus.CANCEL_REQUESTED), fence(lease)],
  };
}

/** Recovery of an expired lease with attempts left: back at its old place in the queue, due now (the attempt that died is counted). */
export function recoveredRequeue(task: ObservedLease, now: number): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      updatedAt: now,
      status: TaskStatus.QUEUED,
      // Recovery writes no body item: a holder id long enough to overflow the inline size is cut.
      ...storeError(
        `lease expired on attempt ${task.attempts} of ${task.maxAttempts} (holder ${task.leaseOwner ?? 'unknown'})`,
      ).fields,
      ...readyKeys(task, task.availableAt),
    },
    require: [observed(task)],
  };
}

/** Recovery of an expired lease on its last attempt: FAILED with decideRecovery's error. */
export function recoveredFail(
  task: ObservedLease,
  now: number,
  error: string,
  config: Pick<LeaseholdConfig, 'retentionDays'>,
): Transition {
  return {
    assign: {
      ...LEASE_LEFT,
      updatedAt: now,
      ...finishedFields(now, config),
      status: TaskStatus.FAILED,
      ...storeError(error).fields,
    },
    require: [observed(task)],
  };
}

/** Recovery of an expired lease whose cancel was requested: CANCELLED. */
export function recoveredCancel(
  task: ObservedLease,
  now: number,
  config: Pick<LeaseholdConfig, 'retentionDays'>,
): Transition {
  return {
    assign: { ...LEASE_LEFT, updatedAt: now, ...finishedFields(now, config), status: TaskStatus.CANCELLED },
    require: [observed(task)],
  };
}

/** A due delayed task into the ready index, by key, without a read: its ready keys are copied inside DynamoDB. */
export function promoted(delayPartition: string, now: number): Transition {
  return {
    copy: { [INDEX.ready.partition]: DUE_READY.partition, [INDEX.ready.sort]: DUE_READY.sort },
    assign: {
      updatedAt: now,
      ...DELAY_LEFT,
    },
    require: [stillDelayedAndDue(delayPartition, now)],
  };
}

/** The API's retry of a FAILED or CANCELLED task (read as `task.status`): QUEUED and due now, with a fresh attempt budget. */
export function retried(
  task: Place & Pick<TaskItem, 'status' | 'childCount'>,
  now: number,
  /** The payload item's new TTL, when the retry had to move it (payload-lifetime.ts). */
  payloadUntil?: number,
): Transition {
  return {
    assign: {
      ...childrenSettled(task),
      ...(payloadUntil === undefined ? {} : { payloadUntil }),
      status: TaskStatus.QUEUED,
      attempts: 0,
      availableAt: now,
      updatedAt: now,
      ...readyKeys(task, now),
      finishedAt: undefined,
      [TTL_ATTRIBUTE]: undefined,
      result: undefined,
      resultToken: undefined,
      error: undefined,
      errorToken: undefined,
      progress: undefined,
      progressNote: undefined,
    },
    // A second retry, or anything else that moved the task since the read, makes this fail.
    require: [hasStatus(task.status)],
  };
}

/**
 * A retried parent starts a new round: its children so far count as ended (one of them still running,
 * say after a cancel, cannot count again and move the new round's counter), their failures forgotten,
 * and its handler's next children numbered after them. It still reads them all in ctx.children.
 */
function childrenSettled(task: Pick<TaskItem, 'childCount'>): Record<string, unknown> {
  const count = task.childCount ?? 0;
  if (count === 0) return {};
  return {
    childrenEnded: new Set(Array.from({ length: count }, (_, i) => i)),
    childrenPending: 0,
    childBase: count,
    childFailures: undefined,
    childFailure: undefined,
  };
}

// --- carrying an edge out ---

/** The UpdateItem expression for an edge (conditions, copies, assignments, counters). */
export function asUpdate(t: Transition): Expression {
  const e = new Expression();
  for (const part of t.require) e.require(part);
  for (const [target, source] of Object.entries(t.copy ?? {})) e.copy(target, source);
  e.assign(t.assign);
  for (const [attribute, n] of Object.entries(t.add ?? {})) e.add(attribute, n);
  for (const [attribute, members] of Object.entries(t.addToSet ?? {})) e.add(attribute, members);
  return e;
}

/** The condition alone, for a PutItem of `applyTransition(record, t)`. */
export function conditionOf(t: Transition): Expression {
  const e = new Expression();
  for (const part of t.require) e.require(part);
  return e;
}

/**
 * The item after the edge, computed in memory as DynamoDB applies an update: every operand is read
 * from the item before it; a missing counter starts at 0. Conditions are not evaluated. Enqueue builds
 * its new item with it; tests and cost estimates (write-units.ts) use it to follow a task.
 */
export function applyTransition<T extends object>(item: T, t: Transition): T {
  const before = item as Record<string, unknown>;
  const after: Record<string, unknown> = { ...before };
  for (const [target, source] of Object.entries(t.copy ?? {})) {
    if (before[source] === undefined) delete after[target];
    else after[target] = before[source];
  }
  for (const [attribute, value] of Object.entries(t.assign)) {
    if (value === undefined) delete after[attribute];
    else after[attribute] = value;
  }
  for (const [attribute, n] of Object.entries(t.add ?? {}))
    after[attribute] = (typeof before[attribute] === 'number' ? (before[attribute] as number) : 0) + n;
  for (const [attribute, members] of Object.entries(t.addToSet ?? {}))
    after[attribute] = new Set([...((before[attribute] as Set<number> | undefined) ?? []), ...members]);
  return after as T;
}

// --- the pieces the edges share ---

/** Removed whenever a task leaves its lease (terminal, requeued or released): the lease and its lease-index entry. */
export const LEASE_LEFT = {
  leaseOwner: undefined,
  leaseUntil: undefined,
  [INDEX.lease.partition]: undefined,
  [INDEX.lease.sort]: undefined,
} as const;

/** Removed whenever a task leaves the delay index (promoted, claimed when due, cancelled): its entry and the ready keys it carried. */
const DELAY_LEFT = {
  [INDEX.delay.partition]: undefined,
  [INDEX.delay.sort]: undefined,
  [DUE_READY.partition]: undefined,
  [DUE_READY.sort]: undefined,
} as const;

/** What every claim assigns: RUNNING under this worker until `leaseUntil`, in the lease index, in its shard. */
function leaseTaken(
  shard: number,
  workerId: string,
  now: number,
  leaseUntil: number,
  config: Pick<LeaseholdConfig, 'leaseTimeoutMs' | 'heartbeatIntervalMs' | 'clockSkewMs'>,
): Record<string, unknown> {
  return {
    status: TaskStatus.RUNNING,
    leaseOwner: workerId,
    leaseUntil,
    startedAt: now,
    updatedAt: now,
    [INDEX.lease.partition]: leaseSweepPartition(shard),
    [INDEX.lease.sort]: sweepKeyFor(leaseUntil, config),
  };
}

/** Every write under a lease: the writer holds this very claim (see holdsLease). Always the last part. */
export const fence = (lease: LeaseRef): ConditionPart => holdsLease(lease.owner, lease.token);

/** Recovery: the lease is exactly as it was read back. */
const observed = (task: ObservedLease): ConditionPart =>
  leaseAsObserved(task.leaseToken, task.status, task.leaseUntil!);

const placeOf = (lease: LeaseRef): Place => ({
  id: lease.taskId,
  type: lease.type,
  shard: lease.shard,
  priority: lease.priority,
  createdAt: lease.createdAt,
  ...(lease.rotation === undefined ? {} : { rotation: lease.rotation }),
});

/** A task's ready keys: its shard or lane, or its rotation's partition when it waits in one (group-rules.ts). */
export function readyKeys(task: Place, availableAt: number): Record<string, string> {
  const claimKey = readySortKey(task.priority, availableAt, task.createdAt, task.id);
  if (task.rotation !== undefined)
    return {
      [INDEX.ready.partition]: rotationPartitionOf(task.type, task.rotation),
      [INDEX.ready.sort]: rotationSortKey(task.rotation, claimKey),
    };
  return {
    [INDEX.ready.partition]: readyPartition(task.type, task.shard, task.priority),
    [INDEX.ready.sort]: claimKey,
  };
}

/** Where a task queued at `now` goes: the ready index when due, else the delay index (with the ready keys it will take). */
function queuedAt(task: Place, availableAt: number, now: number): Record<string, unknown> {
  const ready = readyKeys(task, availableAt);
  if (availableAt <= now) return ready;
  return {
    [INDEX.delay.partition]: delaySweepPartition(task.shard),
    [INDEX.delay.sort]: availableAt,
    [DUE_READY.partition]: ready[INDEX.ready.partition],
    [DUE_READY.sort]: ready[INDEX.ready.sort],
  };
}

/** A progress report as stored: the next attempt reads it back as the previous attempt's checkpoint. */
function progressFields(progress: ProgressReport | undefined): Record<string, unknown> {
  return progress ? { progress: progress.fraction, progressNote: progress.note } : {};
}
