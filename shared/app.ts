/** Builds everything a process needs from its environment, once (Lambda cold start, local stack start). */
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { LeaseholdConfig } from './config.js';
import { createTaskRuntime, type TaskRuntime, type TaskRuntimeOptions } from './task-runtime.js';
import { ScheduleService } from './schedules/schedule-service.js';
import { ScheduleStore } from './schedules/schedule-store.js';
import { eventBridgeSync, localSync, type SchedulerSync } from './schedules/scheduler-sync.js';

export interface Leasehold extends TaskRuntime {
  schedules: ScheduleService;
}

export interface LeaseholdOptions extends TaskRuntimeOptions {
  /** Overrides how schedules reach EventBridge Scheduler (tests); default from the configuration. */
  schedulerSync?: SchedulerSync;
}

/** The task runtime plus schedules: for the API, the fire function and the local stack. */
export function createLeasehold(env: Record<string, string | undefined> = process.env, options: LeaseholdOptions = {}): Leasehold {
  const runtime = createTaskRuntime(env, options);
  const schedules = new ScheduleService(new ScheduleStore(runtime.store.ctx), options.schedulerSync ?? schedulerSyncFor(runtime.config), runtime.queue, runtime.clock);
  return { ...runtime, schedules };
}

/** EventBridge Scheduler when the stack configured it, else schedules are evaluated by the local stack. */
function schedulerSyncFor(config: LeaseholdConfig): SchedulerSync {
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
