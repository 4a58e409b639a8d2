/**
 * Lambda sizes derived from the Leasehold configuration (pure, so the rules are tested on their own).
 */
import type { LeaseholdConfig } from '../shared/config.js';

/** Lambda's hard limit on a function's timeout. */
export const LAMBDA_MAX_TIMEOUT_MS = 900_000;

export interface FunctionSizing {
  workerTimeoutMs: number;
  workerMemoryMb: number;
  workerReservedConcurrency: number;
  recoveryTimeoutMs: number;
  apiTimeoutMs: number;
  apiMemoryMb: number;
  recoveryMemoryMb: number;
}

export function sizeFunctions(config: LeaseholdConfig): FunctionSizing {
  // A worker invocation covers the longest task plus the drain at its end.
  const workerTimeoutMs = config.maxExecutionMs + config.drainMarginMs;
  if (workerTimeoutMs > LAMBDA_MAX_TIMEOUT_MS) {
    throw new Error(
      `LEASEHOLD_MAX_EXECUTION_MS + LEASEHOLD_DRAIN_MARGIN_MS is ${workerTimeoutMs} ms; a Lambda worker can run at most ${LAMBDA_MAX_TIMEOUT_MS} ms. Lower the maximum execution time.`,
    );
  }
  const minuteMs = 60_000;
  return {
    workerTimeoutMs,
    // 128 MB of runtime plus 8 MB per concurrent task, in 64 MB steps, at least 256 MB.
    workerMemoryMb: Math.max(256, Math.ceil((128 + 8 * config.workerConcurrency) / 64) * 64),
    // A schedule starts an invocation every minute and each lives up to its timeout: that many overlap, plus one.
    workerReservedConcurrency: Math.ceil(workerTimeoutMs / minuteMs) + 1,
    // A sweep must end before the next one starts.
    recoveryTimeoutMs: Math.min(config.recoveryIntervalMs, LAMBDA_MAX_TIMEOUT_MS),
    recoveryMemoryMb: 256,
    apiTimeoutMs: 10_000,
    apiMemoryMb: 256,
  };
}
