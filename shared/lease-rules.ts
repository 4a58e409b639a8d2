/**
 * Pure lease decisions. No I/O and no clock reads: every function takes `now` from its caller, so
 * the rules are tested with fixed times and the store only carries out what they decide.
 */
import { MAX_DURATION_MS, type LeaseholdConfig } from './config.js';
import type { RandomSource } from './ids.js';
import { TaskStatus, type Task } from './task-model.js';

type LeaseTimes = Pick<LeaseholdConfig, 'leaseTimeoutMs' | 'heartbeatIntervalMs' | 'clockSkewMs'>;

/** When a lease taken or renewed at `now` runs out. */
export function leaseExpiry(now: number, config: Pick<LeaseholdConfig, 'leaseTimeoutMs'>): number {
  return now + config.leaseTimeoutMs;
}

/**
 * How far the sweep index key may run ahead of the lease expiry. The key moves only when a renewal
 * pushes `leaseUntil` past it, so with the defaults (60 s lease, 10 s heartbeat, 5 s skew) only one
 * renewal in five writes the index. Recovery reads up to `cutoff + slack`, so it still sees every
 * expired lease, and a lease renewed on schedule is never read as a candidate:
 * leaseUntil >= now + lease - heartbeat > now - skew + slack.
 */
export function sweepSlackMs(config: LeaseTimes): number {
  return config.leaseTimeoutMs - config.heartbeatIntervalMs - config.clockSkewMs;
}

/** The sweep key for a lease that runs until `leaseUntil`. */
export function sweepKeyFor(leaseUntil: number, config: LeaseTimes): number {
  return leaseUntil + sweepSlackMs(config);
}

/** The new sweep key a renewal must write, or undefined when the current one still covers the lease. */
export function sweepKeyAfterRenewal(
  currentSweepAt: number,
  newLeaseUntil: number,
  config: LeaseTimes,
): number | undefined {
  return newLeaseUntil > currentSweepAt ? sweepKeyFor(newLeaseUntil, config) : undefined;
}

/** Leases that ran out before this instant are expired. The skew margin protects holders whose clock runs behind. */
export function recoveryCutoff(now: number, config: Pick<LeaseholdConfig, 'clockSkewMs'>): number {
  return now - config.clockSkewMs;
}

/** Recovery reads sweep keys up to this bound (see sweepSlackMs). */
export function sweepQueryBound(now: number, config: LeaseTimes): number {
  return recoveryCutoff(now, config) + sweepSlackMs(config);
}

export type RecoveryAction =
  | { action: 'skip'; reason: 'not-leased' | 'lease-valid' }
  | { action: 'cancel' }
  | { action: 'requeue' }
  | { action: 'fail'; error: string };

/** What recovery does with a task it read back, per the task state machine (store/transitions.ts). */
export function decideRecovery(
  task: Pick<Task, 'status' | 'leaseUntil' | 'attempts' | 'maxAttempts' | 'leaseOwner'>,
  now: number,
  config: Pick<LeaseholdConfig, 'clockSkewMs'>,
): RecoveryAction {
  if (task.status !== TaskStatus.RUNNING && task.status !== TaskStatus.CANCEL_REQUESTED)
    return { action: 'skip', reason: 'not-leased' };
  if (task.leaseUntil === undefined || task.leaseUntil >= recoveryCutoff(now, config))
    return { action: 'skip', reason: 'lease-valid' };
  if (task.status === TaskStatus.CANCEL_REQUESTED) return { action: 'cancel' };
  if (task.attempts < task.maxAttempts) return { action: 'requeue' };
  return {
    action: 'fail',
    error: `lease expired (holder ${task.leaseOwner ?? 'unknown'}) on attempt ${task.attempts} of ${task.maxAttempts}`,
  };
}

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/**
 * Exponential backoff with "equal jitter": half the exponential delay is kept, half is random, so
 * retries spread out but never come back sooner than half the intended wait. Never longer than
 * MAX_DURATION_MS, whatever policy a caller passes: a retry's promotion is a timer (see config.ts).
 */
export function retryDelayMs(attempt: number, policy: BackoffPolicy, random: RandomSource): number {
  const exponential = Math.min(policy.maxMs, MAX_DURATION_MS, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential / 2 + random() * (exponential / 2));
}

export type FailureOutcome =
  { status: typeof TaskStatus.QUEUED; availableAt: number } | { status: typeof TaskStatus.FAILED };

/** A failed attempt goes back to the queue after a backoff while attempts remain, else ends FAILED. */
export function decideFailure(
  task: Pick<Task, 'attempts' | 'maxAttempts'>,
  now: number,
  retryable: boolean,
  policy: BackoffPolicy,
  random: RandomSource,
): FailureOutcome {
  if (!retryable || task.attempts >= task.maxAttempts) return { status: TaskStatus.FAILED };
  return { status: TaskStatus.QUEUED, availableAt: now + retryDelayMs(task.attempts, policy, random) };
}

export interface HeldLease {
  holder?: string;
  leaseUntil?: number;
}

/** A slot or lock can be taken when nobody holds it or its holder's lease ran out (with the skew margin). */
export function leaseIsFree(
  slot: HeldLease | undefined,
  now: number,
  config: Pick<LeaseholdConfig, 'clockSkewMs'>,
): boolean {
  if (!slot || slot.holder === undefined) return true;
  return slot.leaseUntil === undefined || slot.leaseUntil < recoveryCutoff(now, config);
}

/** Epoch seconds (DynamoDB TTL) after which a task that finished at `now` may be deleted. */
export function retentionExpiry(now: number, config: Pick<LeaseholdConfig, 'retentionDays'>): number {
  return Math.floor((now + config.retentionDays * 86_400_000) / 1000);
}

/**
 * A claim write can land late (a paused process, a slow network). Its lease was set when it was sent;
 * if little of it is left when the answer arrives, another claimer may take the task (and its slot)
 * before this worker's first renewal. Such a claim is given back, not started.
 */
export function claimLeaseUsable(
  leaseUntil: number,
  now: number,
  config: Pick<LeaseholdConfig, 'clockSkewMs'>,
): boolean {
  return leaseUntil - now > config.clockSkewMs;
}
