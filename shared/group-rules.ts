/**
 * Groups and fair shares (pure rules; docs/architecture.md, 'Groups and fair shares').
 *
 * A task with a `group`, and every task of a type declared `fairShares`, waits in a rotation: its ready
 * entry is filed under a rotation key (the group, or the owner) in one of its type's ROTATION_SHARDS
 * partitions, sorted by rotation key and then by claim order. A claimer reads a rotation partition from
 * a cursor: one Query returns the first heads of the next rotation, and the next Query starts past it
 * (`pastRotation`), so a rotation of 10,000 waiting costs the same single read as a rotation of one and
 * never stands in front of another (no head-of-line blocking). Cursors advance round by round, so the
 * rotations with work are served in turn.
 *
 * A group also limits how many of its tasks run at once (`groupConcurrency`): group slot items taken at
 * claim, which record the claim they admitted. A slot is free again once that claim no longer runs, read
 * from the task item itself, so no write frees it: a finish, a retry and a recovered lease all free it.
 */
import * as z from 'zod';
import { ownerDigest } from './ids.js';
import { DEFAULT_GROUP_CONCURRENCY, MAX_GROUP_CONCURRENCY } from './group-name.js';
import type { LeaseholdConfig } from './config.js';
import { isTerminal, LEASED_STATUSES, type TaskStatus } from './task-model.js';

/** What the definitions declare of groups: each type's `groupConcurrency`, and the types with fair shares. */
export interface TypeGrouping {
  concurrency: Record<string, number>;
  fairShares: readonly string[];
}

export const NO_GROUPING: TypeGrouping = { concurrency: {}, fairShares: [] };

/** At most this many tasks of one group of `type` run at once. */
export const groupConcurrencyOf = (grouping: TypeGrouping, type: string) =>
  grouping.concurrency[type] ?? DEFAULT_GROUP_CONCURRENCY;

/**
 * The rotation a new task waits in, if any: its group's, or its owner's in a type with fair shares.
 * Tasks of neither wait in the type's shards and lanes, as before.
 */
export function rotationForTask(
  grouping: TypeGrouping,
  task: { type: string; owner: string; group?: string | undefined },
): string | undefined {
  if (task.group !== undefined) return rotationKeyOf(task.owner, task.group);
  return grouping.fairShares.includes(task.type) ? rotationKeyOf(task.owner, undefined) : undefined;
}

export const groupConcurrencySchema = z
  .number()
  .int('must be a whole number')
  .min(1)
  .max(MAX_GROUP_CONCURRENCY, `must be at most ${MAX_GROUP_CONCURRENCY}`);

/**
 * The rotation a task waits in: its group (named within its owner, as idempotency keys are, so no
 * caller can hold up another's group), or, ungrouped in a type with fair shares, its owner. The owner
 * goes in as a digest (ids.ts ownerDigest: 22 characters of [A-Za-z0-9_-]), so the key holds no space
 * whatever the owner holds, and stays far below the index's 1,024-byte sort key with any owner.
 */
export function rotationKeyOf(owner: string, group: string | undefined): string {
  const who = ownerDigest(owner);
  return group === undefined ? `o/${who}` : `g/${who}/${group}`;
}

/** Whether a rotation key is a group's (its tasks take a group slot) rather than an owner's fair share. */
export const isGroupRotation = (rotation: string) => rotation.startsWith('g/');

/** A rotated task's ready sort key: its rotation, a space, then the claim-order key (table-layout.ts readySortKey). */
export const rotationSortKey = (rotation: string, claimKey: string) => `${rotation} ${claimKey}`;

/** The rotation a rotated ready sort key belongs to. */
export const rotationOfSortKey = (readySk: string) => readySk.slice(0, readySk.indexOf(' '));

/** The claim-order key inside a ready sort key (the whole key when it is not rotated). */
export const claimKeyOf = (readySk: string) => readySk.slice(readySk.indexOf(' ') + 1);

/**
 * A key past every entry of `rotation` and before every later rotation's: its entries are
 * `<rotation> <...>`, a space being below every character a rotation key holds, and `!` the lowest of those.
 */
export const pastRotation = (rotation: string) => `${rotation}!`;

/** A group slot as read: the claim it admitted, and when. */
export interface GroupSlotSeen {
  claimId?: string;
  taskId?: string;
  takenAt?: number;
}

/** The admitted task as read back (consistent): what says whether its claim still runs. */
export interface GroupHolderSeen {
  status: TaskStatus;
  groupClaim?: string;
  leaseUntil?: number;
}

/**
 * What a claimer may do with a group slot:
 * - `free`: take it (never taken, given back, or its claim has ended);
 * - `held`: its claim runs (or may still be landing: taken less than `pendingMs` ago);
 * - `recoverFirst`: its claim's lease ran out past the skew margin: recover that task, then take it;
 * - `voidFirst`: its claim never applied (the task shows another claim or none): fence that claim off
 *   on the task first (a late write of it is then refused), then take the slot.
 */
export type GroupSlotVerdict = 'free' | 'held' | 'recoverFirst' | 'voidFirst';

export function judgeGroupSlot(
  slot: GroupSlotSeen | undefined,
  holder: GroupHolderSeen | undefined,
  now: number,
  config: Pick<LeaseholdConfig, 'clockSkewMs' | 'requestDeadlineMs'>,
): GroupSlotVerdict {
  if (slot?.claimId === undefined) return 'free';
  if (holder !== undefined && holder.groupClaim === slot.claimId) {
    // The claim landed: the slot is held while that claim runs, and only then.
    if (!LEASED_STATUSES.includes(holder.status)) return 'free';
    if (holder.leaseUntil !== undefined && holder.leaseUntil < now - config.clockSkewMs)
      return 'recoverFirst';
    return 'held';
  }
  // Not landed (yet): a claim write may still be on its way.
  if (groupClaimMayBeLanding(slot, now, config)) return 'held';
  // The task is gone (its record expired): no write of that claim can apply to it any more.
  if (holder === undefined) return 'free';
  return 'voidFirst';
}

/**
 * Whether the slot's last claim was of the very task a claimer holds as its group's head, and that task
 * has since finished: the claimer read a stale head (the task ran meanwhile). Taking the slot would be a
 * write, and the claim of a finished task a refused one and a give-back: three writes for no start.
 */
export const headAlreadyRan = (
  slot: GroupSlotSeen | undefined,
  holder: GroupHolderSeen | undefined,
  candidateId: string,
): boolean =>
  slot?.taskId === candidateId &&
  holder !== undefined &&
  holder.groupClaim === slot.claimId &&
  isTerminal(holder.status);

/** Whether a slot's claim may still be landing on its task (so the slot is held, whatever the task shows). */
export const groupClaimMayBeLanding = (
  slot: GroupSlotSeen,
  now: number,
  config: Pick<LeaseholdConfig, 'clockSkewMs' | 'requestDeadlineMs'>,
) => slot.takenAt !== undefined && now < slot.takenAt + groupClaimPendingMs(config);

/**
 * How long a slot counts as held without a look at its task: its claim write (two sends and a read-back,
 * each under the request deadline) may still be landing. After that, a claim that has not shown up on
 * the task is fenced off before the slot is taken over, so this only spares that write, never safety.
 */
export const groupClaimPendingMs = (config: Pick<LeaseholdConfig, 'clockSkewMs' | 'requestDeadlineMs'>) =>
  3 * config.requestDeadlineMs + config.clockSkewMs;
