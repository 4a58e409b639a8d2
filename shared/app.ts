/** Builds everything a process needs from its environment, once (Lambda cold start, local stack start). */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { systemClock, type Clock } from './clock.js';
import { loadConfig, type LeaseholdConfig } from './config.js';
import { createDocumentClient } from './store/dynamo.js';
import { TaskStore } from './store/task-store.js';
import { taskDefinitions } from './tasks/catalog.js';
import type { TaskDefinition } from './tasks/define.js';
import { TaskRegistry } from './tasks/registry.js';
import { TaskQueue } from './tasks/task-queue.js';
import { ScheduleService } from './schedules/schedule-service.js';
import { ScheduleStore } from './schedules/schedule-store.js';
import { eventBridgeSync, localSync, type SchedulerSync } from './schedules/scheduler-sync.js';

export interface Leasehold {
  config: LeaseholdConfig;
  doc: DynamoDBDocumentClient;
  store: TaskStore;
  registry: TaskRegistry;
  queue: TaskQueue;
  schedules: ScheduleService;
}

export interface LeaseholdOptions {
  definitions?: TaskDefinition[];
  clock?: Clock;
  doc?: DynamoDBDocumentClient;
  /** Overrides how schedules reach EventBridge Scheduler (tests); default from the configuration. */
  schedulerSync?: SchedulerSync;
  /** Told before each claim or recovery write is sent (fault-testing histories). */
  onIntent?: (op: 'claim' | 'recover', taskId: string) => void;
}

export function createLeasehold(env: Record<string, string | undefined> = process.env, options: LeaseholdOptions = {}): Leasehold {
  const base = loadConfig(env);
  const registry = new TaskRegistry(options.definitions ?? taskDefinitions, base);
  // Limits declared on task types apply unless the environment sets that type's limit itself.
  const config: LeaseholdConfig = { ...base, typeConcurrency: { ...registry.limits(), ...base.typeConcurrency } };
  const doc = options.doc ?? createDocumentClient(config);
  const clock = options.clock ?? systemClock(config.clockOffsetMs);
  const store = new TaskStore({ doc, config, clock, ...(options.onIntent ? { onIntent: options.onIntent } : {}) });
  const queue = new TaskQueue(store, registry, config);
  const schedules = new ScheduleService(new ScheduleStore(store.ctx), options.schedulerSync ?? schedulerSyncFor(config), queue, clock);
  return { config, doc, store, registry, queue, schedules };
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
