/**
 * An answer before Lambda stops the function. A request whose DynamoDB calls run long (throttled and
 * sent again by the SDK, or slow) would otherwise run into the function's timeout, which API Gateway
 * answers 500: a status the client does not send again. It is answered `504 DEADLINE` a margin before
 * instead, which the client sends again. The work is not cancelled (a write in flight may still
 * apply), so the answer says what a lost answer says: the request may have been acted on, and the
 * same request (an enqueue with its idempotency key) is safe to send again.
 */
import { problem, type ApiResponse } from './http.js';

/** Left of the function's time for the answer to reach API Gateway, and for the kick after it. */
export const ANSWER_MARGIN_MS = 1_500;

export interface DeadlineTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const globalTimers: DeadlineTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** `work`, or `late()` if it has not settled within `ms` (no deadline when `ms` is undefined). */
export function settleWithin<T>(
  work: Promise<T>,
  ms: number | undefined,
  late: () => T,
  timers: DeadlineTimers = globalTimers,
): Promise<T> {
  if (ms === undefined) return work;
  let handle: unknown;
  const timeout = new Promise<T>((resolve) => {
    handle = timers.setTimeout(() => resolve(late()), Math.max(0, ms));
  });
  return Promise.race([work, timeout]).finally(() => timers.clearTimeout(handle));
}

/** The answer to a request that ran out of time: 504, to be sent again after a second. */
export const deadlineAnswer = (): ApiResponse =>
  problem(
    504,
    'DEADLINE',
    'The request ran out of time waiting for DynamoDB (throttled or slow) and may have been applied; send the same request again (an enqueue with its idempotency key) after a short wait.',
    { headers: { 'retry-after': '1' } },
  );
