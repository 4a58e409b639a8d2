/**
 * Leasehold for the processes that only make requests of the queue and its schedules: the API and
 * fire Lambdas. Built on the request runtime (request-runtime.ts), so their bundles leave out the
 * lease path; createLeasehold (app.ts) wires the same schedules onto the whole task runtime, for the
 * local stack.
 */
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { LeaseholdConfig, SchedulerWiring } from './config.js';
import type { TaskDefinition } from './tasks/define.js';
import { createRequestRuntime, type RequestRuntime, type TaskRuntimeDeps } from './request-runtime.js';
import { ScheduleService } from './schedules/schedule-service.js';
import { ScheduleStore } from './schedules/schedule-store.js';
import { eventBridgeSync, localSync, type SchedulerSync } from './schedules/scheduler-sync.js';

export interface RequestLeasehold extends RequestRuntime {
  schedules: ScheduleService;
}

export interface LeaseholdDeps extends TaskRuntimeDeps {
  /** Overrides how schedules reach EventBridge Scheduler (tests); default from the configuration. */
  schedulerSync?: SchedulerSync;
}

/** The request runtime plus schedules: for the API and the fire function. */
export function createRequestLeasehold(
  config: LeaseholdConfig,
  definitions: TaskDefinition[],
  deps: LeaseholdDeps = {},
): RequestLeasehold {
  return withSchedules(createRequestRuntime(config, definitions, deps), deps);
}

/** Adds the schedule service to a runtime: its schedules are kept in the runtime's table and enqueue through its submitter. */
export function withSchedules<Runtime extends RequestRuntime>(
  runtime: Runtime,
  deps: LeaseholdDeps,
): Runtime & { schedules: ScheduleService } {
  const schedules = new ScheduleService(
    new ScheduleStore(runtime.store.ctx),
    deps.schedulerSync ?? schedulerSyncFor(runtime.config),
    runtime.submitter,
    runtime.clock,
  );
  return { ...runtime, schedules };
}

/** EventBridge Scheduler when the stack configured it, else schedules are evaluated by the local stack. */
function schedulerSyncFor(config: SchedulerWiring & Pick<LeaseholdConfig, 'region'>): SchedulerSync {
  const { scheduleGroup, schedulerRoleArn, fireFunctionArn, scheduleDeadLetterArn } = config;
  if (!scheduleGroup || !schedulerRoleArn || !fireFunctionArn) return localSync;
  return eventBridgeSync({
    client: new SchedulerClient({ region: config.region }),
    groupName: scheduleGroup,
    roleArn: schedulerRoleArn,
    targetArn: fireFunctionArn,
    ...(scheduleDeadLetterArn ? { deadLetterArn: scheduleDeadLetterArn } : {}),
  });
}
