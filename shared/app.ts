/** Builds everything a process needs from its parsed configuration and task definitions, once (Lambda cold start, local stack start). */
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { LeaseholdConfig, SchedulerWiring } from './config.js';
import type { TaskDefinition } from './tasks/define.js';
import { createTaskRuntime, type TaskRuntime, type TaskRuntimeDeps } from './task-runtime.js';
import { ScheduleService } from './schedules/schedule-service.js';
import { ScheduleStore } from './schedules/schedule-store.js';
import { eventBridgeSync, localSync, type SchedulerSync } from './schedules/scheduler-sync.js';

export interface Leasehold extends TaskRuntime {
  schedules: ScheduleService;
}

export interface LeaseholdDeps extends TaskRuntimeDeps {
  /** Overrides how schedules reach EventBridge Scheduler (tests); default from the configuration. */
  schedulerSync?: SchedulerSync;
}

/** The task runtime plus schedules: for the API, the fire function and the local stack. */
export function createLeasehold(
  config: LeaseholdConfig,
  definitions: TaskDefinition[],
  deps: LeaseholdDeps = {},
): Leasehold {
  const runtime = createTaskRuntime(config, definitions, deps);
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
