/**
 * Builds everything a process needs from its parsed configuration and task definitions, once (Lambda
 * cold start, local stack start): the whole task runtime plus schedules. The API and fire Lambdas
 * build createRequestLeasehold (request-app.ts) instead, which leaves the lease path out.
 */
import type { LeaseholdConfig } from './config.js';
import type { TaskDefinition } from './tasks/define.js';
import { createTaskRuntime, type TaskRuntime } from './task-runtime.js';
import type { ScheduleService } from './schedules/schedule-service.js';
import { withSchedules, type LeaseholdDeps } from './request-app.js';

export type { LeaseholdDeps };

export interface Leasehold extends TaskRuntime {
  schedules: ScheduleService;
}

/** The task runtime plus schedules: for the local stack (API, worker and recovery in one process). */
export function createLeasehold(
  config: LeaseholdConfig,
  definitions: TaskDefinition[],
  deps: LeaseholdDeps = {},
): Leasehold {
  return withSchedules(createTaskRuntime(config, definitions, deps), deps);
}
