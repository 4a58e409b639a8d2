/**
 * The named parts every conditional write is built from. Each says which race it closes; a write
 * states its guarantees by listing parts, never by inlining expression text.
 */
import { DEFAULT_PRIORITY, INDEX, KEY } from '../table-layout.js';
import { LEASED_STATUSES, TaskStatus } from '../task-model.js';
import type { ConditionPart } from './update-expression.js';

/** Enqueue: a second put with the same id (a retried or repeated idempotent enqueue) must not overwrite the first. */
export const itemIsNew: ConditionPart = (e) => `attribute_not_exists(${e.name(KEY.partition)})`;

/**
 * A child's put (a flow's, or a handler's children): the id is free, or holds a child of an earlier
 * life of its parent's id (marked with another `parentCreatedAt`: the parent's key used again after
 * its record expired, before TTL removed the children), which this put replaces; a running one's
 * later writes then fail their fence. A child of this life (a resend of the flow, a retried attempt's
 * same children), or one written before the mark, refuses it: it is written already.
 */
export const childIsNew =
  (parentCreatedAt: number): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name(KEY.partition)}) OR (attribute_exists(${e.name('parentCreatedAt')}) AND ${e.name('parentCreatedAt')} <> ${e.value(parentCreatedAt)})`;

/**
 * A child's count on its parent: the parent is the life the child was written for (its mark). A child
 * of an earlier life of the parent's id, still queued or running when the id came back, never counts
 * on the new parent.
 */
export const parentLifeIs =
  (createdAt: number): ConditionPart =>
  (e) =>
    `${e.name('createdAt')} = ${e.value(createdAt)}`;

/** Expiring a body item nobody names: only while it is there (TTL or another request may have removed it), so no empty item is made. */
export const itemExists: ConditionPart = (e) => `attribute_exists(${e.name(KEY.partition)})`;

/**
 * Claim (SKIP LOCKED): the task is still QUEUED at the head entry we read. Another worker's claim, a
 * cancel, or a stale (lagging) index entry all make this fail, and the claimer moves on without waiting.
 */
export const stillQueuedAt =
  (readySk: string): ConditionPart =>
  (e) =>
    `${e.name('status')} = ${e.value(TaskStatus.QUEUED)} AND ${e.name(INDEX.ready.sort)} = ${e.value(readySk)}`;

/** Claim: invariant 4, attempts never exceed maxAttempts, even if a task re-enters the queue by a path we did not foresee. */
export const hasAttemptsLeft: ConditionPart = (e) => `${e.name('attempts')} < ${e.name('maxAttempts')}`;

/**
 * Every write under a lease: the writer holds this very claim. The token grows with every claim, so
 * a worker that lost the lease (paused, partitioned, recovered and re-claimed, even by itself under
 * the same worker id) cannot write over the current holder.
 */
export const holdsLease =
  (owner: string, token: number): ConditionPart =>
  (e) =>
    `${e.name('leaseToken')} = ${e.value(token)} AND ${e.name('leaseOwner')} = ${e.value(owner)} AND ${e.name('status')} IN (${LEASED_STATUSES.map((s) => e.value(s)).join(', ')})`;

/**
 * The task is still in the status the write was chosen for: a user's cancel or retry (nothing moved the
 * task since its read); fail and release need RUNNING (a cancel requested meanwhile refuses them, and the
 * holder finishes the cancel instead); finishing a cancel needs CANCEL_REQUESTED.
 */
export const hasStatus =
  (status: TaskStatus): ConditionPart =>
  (e) =>
    `${e.name('status')} = ${e.value(status)}`;

/**
 * Recovery: the lease is exactly as we read it (same token, status and expiry). A renewal, a claim,
 * a completion or a second sweep in between changes one of them, so two sweeps never both fix a task.
 */
export const leaseAsObserved =
  (token: number, status: TaskStatus, leaseUntil: number): ConditionPart =>
  (e) =>
    `${e.name('leaseToken')} = ${e.value(token)} AND ${e.name('status')} = ${e.value(status)} AND ${e.name('leaseUntil')} = ${e.value(leaseUntil)}`;

/** Promotion of a delayed task: it is still QUEUED, still in that delay partition, and due. A cancel or a second promoter fails here. */
export const stillDelayedAndDue =
  (delayPk: string, now: number): ConditionPart =>
  (e) =>
    `${e.name('status')} = ${e.value(TaskStatus.QUEUED)} AND ${e.name(INDEX.delay.partition)} = ${e.value(delayPk)} AND ${e.name(INDEX.delay.sort)} <= ${e.value(now)}`;

/**
 * Moving a delayed task written before the delay index existed (legacy-delays.ts): it is still QUEUED
 * under exactly the legacy entry read, not in the ready index, and carries the ready keys a promotion
 * copies. A promotion, claim or cancel by an older worker still running (which writes the legacy keys)
 * changes the entry, the status or those keys, and the move is refused; so is any item that kept the
 * legacy keys by accident, which must not land in two indexes.
 */
export const stillInLegacyDelay =
  (partition: string, at: number): ConditionPart =>
  (e) =>
    `${e.name('status')} = ${e.value(TaskStatus.QUEUED)} AND ${e.name(INDEX.lease.partition)} = ${e.value(partition)} AND ${e.name(INDEX.lease.sort)} = ${e.value(at)} AND attribute_not_exists(${e.name(INDEX.ready.partition)}) AND attribute_exists(${e.name('dueReadyPk')})`; // dueReadyPk: DUE_READY.partition (transitions.ts)

/**
 * Claiming a due delayed task straight from its delay partition (no promotion, no ready read): only at
 * the default priority. The claimer took every head above it first, and one below it must wait until no
 * default-priority task is due (the seed's claim order); such a task is left to its promotion.
 */
export const hasDefaultPriority: ConditionPart = (e) =>
  `${e.name('priority')} = ${e.value(DEFAULT_PRIORITY)}`;

/**
 * The same claim, without the task's type in hand (a delay entry is keys only): only a type the claimer
 * serves and may take without a concurrency slot. Another type is left to its promotion.
 */
export const typeIsOneOf =
  (types: readonly string[]): ConditionPart =>
  (e) =>
    `${e.name('type')} IN (${types.map((t) => e.value(t)).join(', ')})`;

/**
 * Taking a concurrency slot: nobody took it since we read it (its token is unchanged) and it is
 * still free (a holder may have renewed it since, which does not change the token).
 */
export const slotStillFree =
  (observedToken: number | undefined, cutoff: number): ConditionPart =>
  (e) =>
    observedToken === undefined
      ? `attribute_not_exists(${e.name(KEY.partition)})`
      : `${e.name('slotToken')} = ${e.value(observedToken)} AND (${leaseFreeToTake(cutoff)(e)})`;

/** Taking a lock: it was never taken, was released, or its holder's lease ran out (past the skew margin). */
export const lockFreeToTake =
  (cutoff: number): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name(KEY.partition)}) OR ${leaseFreeToTake(cutoff)(e)}`;

const leaseFreeToTake =
  (cutoff: number): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name('holder')}) OR ${e.name('leaseUntil')} < ${e.value(cutoff)}`;

/**
 * Renewing or giving back a slot, a lock or a fleet seat: only its current holder, under the token of
 * its own acquisition. A holder that was paused past its lease, and whose lock was taken over, fails here.
 */
export const holdsTokenLease =
  (holder: string, token: number, tokenAttribute: 'slotToken' | 'lockToken' | 'token'): ConditionPart =>
  (e) =>
    `${e.name(tokenAttribute)} = ${e.value(token)} AND ${e.name('holder')} = ${e.value(holder)}`;

/**
 * Replacing an item read a moment ago (an expired idempotent task): nobody wrote it since, so a
 * concurrent enqueue of the same key, or a late write to the old task, makes this fail.
 */
export const unchangedSince =
  (writeId: string | undefined): ConditionPart =>
  (e) =>
    writeId === undefined
      ? `attribute_not_exists(${e.name('writeId')})`
      : `${e.name('writeId')} = ${e.value(writeId)}`;

/**
 * A rate-limit start (rate-rules.ts): the token's last start is at least the interval before this one
 * (or it never gave one). Two claimers that read it free both try; only the first write passes, so no
 * token gives two starts within the interval.
 */
export const rateTokenFree =
  (cutoff: number): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name('usedAt')}) OR ${e.name('usedAt')} <= ${e.value(cutoff)}`;

/**
 * A rate-limit start replaces exactly the use this claimer read (none: the token was never used), so a
 * give-back (below) restores what was there. Without it, a take could overwrite a newer take by another
 * claimer (whose clock or start time is earlier), and its give-back would erase that claimer's start.
 */
export const rateTokenAsSeen =
  (usedAt: number | undefined): ConditionPart =>
  (e) =>
    usedAt === undefined
      ? `attribute_not_exists(${e.name('usedAt')})`
      : `${e.name('usedAt')} = ${e.value(usedAt)}`;

/**
 * Giving back a start whose claim lost its race: only our own take, still as we wrote it. A start
 * taken since (by anyone) stands.
 */
export const rateTokenTakenBy =
  (usedAt: number, taskId: string): ConditionPart =>
  (e) =>
    `${e.name('usedAt')} = ${e.value(usedAt)} AND ${e.name('taskId')} = ${e.value(taskId)}`;

/**
 * A claim admitted by a group slot: no claimer has fenced this claim off since (it took the slot over,
 * judging the claim had not landed). Without it a claim write delayed past that judgement (a paused
 * process, a slow resend) would land and run a second task of the group beside the new holder's. The
 * fenced claims are a set: a later fence of another claim must not lift an earlier one.
 */
export const groupClaimNotVoided =
  (claimId: string): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name('groupVoids')}) OR NOT contains(${e.name('groupVoids')}, ${e.value(claimId)})`;

/**
 * Fencing a group claim off: only while that claim has not landed on the task (a landed claim runs, and
 * its slot is held), and only on a task that is there (no empty item is made).
 */
export const groupClaimNotLanded =
  (claimId: string): ConditionPart =>
  (e) =>
    `attribute_exists(${e.name(KEY.partition)}) AND (attribute_not_exists(${e.name('groupClaim')}) OR ${e.name('groupClaim')} <> ${e.value(claimId)})`;

/**
 * A due claim straight from the delay index takes no rotated task: those wait their rotation's turn
 * (and a group's slot), which only a claim of their ready entry passes.
 */
export const isNotRotated: ConditionPart = (e) => `attribute_not_exists(${e.name('rotation')})`;

/**
 * Taking a group slot: it is as this claimer read it (free, or held by the claim it judged ended or fenced
 * off). Two claimers judging the same slot free never both take it.
 */
export const groupSlotAsSeen =
  (claimId: string | undefined): ConditionPart =>
  (e) =>
    claimId === undefined
      ? `attribute_not_exists(${e.name('claimId')})`
      : `${e.name('claimId')} = ${e.value(claimId)}`;

/** Giving a group slot back after a lost claim: only while it still holds that claim. */
export const holdsGroupSlot =
  (claimId: string): ConditionPart =>
  (e) =>
    `${e.name('claimId')} = ${e.value(claimId)}`;

/**
 * A debounce join: the task waits and has never started. A claim landing first makes it RUNNING and
 * sets `startedAt`, a cancel makes it CANCELLED, and the join is refused: the enqueue then makes a new
 * task. `startedAt` rather than the attempts: a retry, a release or an undone claim gives attempts
 * back, and a join must never move a task that already ran (its payload would never run again).
 */
export const neverStarted: ConditionPart = (e) =>
  `${e.name('status')} = ${e.value(TaskStatus.QUEUED)} AND attribute_not_exists(${e.name('startedAt')})`;

/**
 * Moving a debounce key to its next generation: only from the generation this enqueuer read, so two
 * enqueuers that both found the task started move it once, and both then meet at the new task.
 */
export const generationAsSeen =
  (generation: number): ConditionPart =>
  (e) =>
    generation === 0
      ? `attribute_not_exists(${e.name('generation')}) OR ${e.name('generation')} = ${e.value(0)}`
      : `${e.name('generation')} = ${e.value(generation)}`;

// --- flows (flow-rules.ts) ---

/**
 * Counting a child's end on its parent: that child (its number) was not counted before. The worker
 * counts it after the child's outcome write, recovery's look at a waiting parent counts what a dead
 * writer left; a resend after a lost answer, or both of them, must not count one end twice.
 */
export const childNotCounted =
  (index: number): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name('childrenEnded')}) OR NOT contains(${e.name('childrenEnded')}, ${e.value(index)})`;

/**
 * Counting a child's end: the parent is there and has not ended. It may be RUNNING or QUEUED (its
 * handler enqueued the child and has not yet asked to wait, or that attempt failed): the count still
 * holds for its next wait. A parent that ended (cancelled, failed) needs no count, and no item is made.
 */
export const parentNotEnded: ConditionPart = (e) =>
  `${e.name('status')} IN (${[
    TaskStatus.QUEUED,
    TaskStatus.RUNNING,
    TaskStatus.CANCEL_REQUESTED,
    TaskStatus.WAITING_CHILDREN,
  ]
    .map((s) => e.value(s))
    .join(', ')})`;

/**
 * A parent's readiness (QUEUED, or FAILED by a child): it still waits, and every child's end has been
 * counted. Two writers that both saw the counter reach 0 (the last child's, recovery's) move it once.
 */
export const waitsWithAllChildrenCounted: ConditionPart = (e) =>
  `${e.name('status')} = ${e.value(TaskStatus.WAITING_CHILDREN)} AND ${e.name('childrenPending')} <= ${e.value(0)}`;

/**
 * Raising a parent's child count (ctx.enqueueChildren): from the count its holder knows. The holder is
 * the only writer of the count, so this fails only on a resend of its own raise, which the write id settles.
 */
export const childCountIs =
  (count: number): ConditionPart =>
  (e) =>
    count === 0
      ? `attribute_not_exists(${e.name('childCount')}) OR ${e.name('childCount')} = ${e.value(0)}`
      : `${e.name('childCount')} = ${e.value(count)}`;

/**
 * Recovery's look at a waiting parent moves its next look: only from the one it read, so two sweeps
 * that both found it due move it once (and count its children once: childNotCounted).
 */
export const flowCheckAsSeen =
  (sweepAt: number): ConditionPart =>
  (e) =>
    `${e.name('status')} = ${e.value(TaskStatus.WAITING_CHILDREN)} AND ${e.name(INDEX.lease.sort)} = ${e.value(sweepAt)}`;

/**
 * A step's result (ctx.step): no attempt with a newer token stored that step. A stale holder (its lease
 * lost, the task claimed again) cannot overwrite what the newer attempt stored and relies on; its own
 * resend after a lost answer (same token) writes the same result again.
 */
export const noNewerStep =
  (token: number): ConditionPart =>
  (e) =>
    `attribute_not_exists(${e.name('token')}) OR ${e.name('token')} <= ${e.value(token)}`;
