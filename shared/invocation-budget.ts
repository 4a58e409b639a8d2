/**
 * How long tasks may run and when a time-limited worker (a Lambda invocation) may still claim them.
 * Pure: the worker's claim rule, the execution's timeout, enqueue validation and the CDK sizing all
 * use these, so the claim rule and the function's timeout cannot disagree again (an earlier version
 * sized the Lambda timeout exactly maxExecution + drain, which `getRemainingTimeInMillis()` never
 * reaches, so the deployed worker never claimed a type without a shorter timeout of its own).
 */
import { settings, type LeaseholdConfig } from './config.js';

/**
 * How long a fresh worker invocation can still claim a task of the longest allowed timeout, by default
 * (LEASEHOLD_WORKER_CLAIM_WINDOW_MS): one schedule period, so the invocation each one-minute tick
 * starts can take every type, and a type of timeout T is claimable for the first
 * (window + maxExecution - T) of the invocation.
 */
export const WORKER_CLAIM_WINDOW_MS = settings.workerClaimWindowMs.default;

/** Lambda's hard limit on a function's timeout. */
export const LAMBDA_MAX_TIMEOUT_MS = 900_000;

type Budget = Pick<LeaseholdConfig, 'maxExecutionMs' | 'drainMarginMs' | 'workerClaimWindowMs'>;

/** The longest a task of a type may run: its own timeout, never more than the maximum execution time. */
export function typeTimeoutMs(
  typeTimeout: number | undefined,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
): number {
  return Math.min(typeTimeout ?? config.maxExecutionMs, config.maxExecutionMs);
}

/**
 * The timeout a task runs under: its own when it asked for one, never more than its type allows.
 * Enqueue refuses a longer one; clamping here keeps a task written before that rule (or by a client
 * bypassing it) from outrunning what the claim rule checked, which made workers claim and release it
 * in a loop.
 */
export function effectiveTimeoutMs(
  taskTimeout: number | undefined,
  typeTimeout: number | undefined,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
): number {
  const limit = typeTimeoutMs(typeTimeout, config);
  return taskTimeout === undefined ? limit : Math.min(taskTimeout, limit);
}

/** A worker with `remainingMs` left may claim a task of this timeout only if it can finish it and still drain. */
export function canStartWithin(
  remainingMs: number,
  timeoutMs: number,
  config: Pick<LeaseholdConfig, 'drainMarginMs'>,
): boolean {
  return timeoutMs + config.drainMarginMs <= remainingMs;
}

/** The worker Lambda's timeout: the longest task, the drain after it, and the claim window before it. */
export function workerInvocationTimeoutMs(config: Budget): number {
  return config.maxExecutionMs + config.drainMarginMs + config.workerClaimWindowMs;
}

/** A problem with the settings for a Lambda worker, or undefined when they fit Lambda's limit. */
export function workerTimeoutProblem(config: Budget): string | undefined {
  const needed = workerInvocationTimeoutMs(config);
  if (needed <= LAMBDA_MAX_TIMEOUT_MS) return undefined;
  return (
    `LEASEHOLD_MAX_EXECUTION_MS (${config.maxExecutionMs}) + LEASEHOLD_DRAIN_MARGIN_MS (${config.drainMarginMs}) + LEASEHOLD_WORKER_CLAIM_WINDOW_MS (${config.workerClaimWindowMs}) ` +
    `is ${needed} ms, over Lambda's ${LAMBDA_MAX_TIMEOUT_MS} ms limit: lower the maximum execution time to at most ${LAMBDA_MAX_TIMEOUT_MS - config.drainMarginMs - config.workerClaimWindowMs} ms`
  );
}
