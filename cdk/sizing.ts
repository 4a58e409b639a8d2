/**
 * Lambda sizes derived from the Leasehold configuration (pure, so the rules are tested on their own).
 * The worker's timeout comes from the same rule its claim loop uses (shared/invocation-budget.ts).
 */
import type { LeaseholdConfig } from '../shared/config.js';
import {
  LAMBDA_MAX_TIMEOUT_MS,
  workerInvocationTimeoutMs,
  workerTimeoutProblem,
} from '../shared/invocation-budget.js';

export { LAMBDA_MAX_TIMEOUT_MS };

/** Scheduler starts the worker this often. */
export const WORKER_SCHEDULE_PERIOD_MS = 60_000;

export interface FunctionSizing {
  workerTimeoutMs: number;
  workerMemoryMb: number;
  /** How many scheduled worker invocations can run at once (each lives up to its timeout): what a reserved concurrency would have to allow. */
  overlappingWorkers: number;
  recoveryTimeoutMs: number;
  apiTimeoutMs: number;
  apiMemoryMb: number;
  recoveryMemoryMb: number;
}

export function sizeFunctions(config: LeaseholdConfig): FunctionSizing {
  const problem = workerTimeoutProblem(config);
  if (problem) throw new Error(problem);
  const workerTimeoutMs = workerInvocationTimeoutMs(config);
  return {
    workerTimeoutMs,
    // 128 MB of runtime plus 8 MB per concurrent task, in 64 MB steps, at least 256 MB.
    workerMemoryMb: Math.max(256, Math.ceil((128 + 8 * config.workerConcurrency) / 64) * 64),
    overlappingWorkers: Math.ceil(workerTimeoutMs / WORKER_SCHEDULE_PERIOD_MS),
    // A sweep must end before the next one starts.
    recoveryTimeoutMs: Math.min(config.recoveryIntervalMs, LAMBDA_MAX_TIMEOUT_MS),
    recoveryMemoryMb: 256,
    apiTimeoutMs: 10_000,
    apiMemoryMb: 256,
  };
}
