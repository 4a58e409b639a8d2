/**
 * The part of Leasehold every process needs (store, task registry, queue, lifecycle stream), built
 * from a parsed configuration and the task definitions, without schedules: the worker and recovery
 * Lambdas import only this, so their bundles leave out the Scheduler client and the cron evaluator.
 * Entry points (functions/*.ts, the local stack) parse the configuration once and bring the task
 * catalog; the core never imports user content.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock, type Clock } from './clock.js';
import type { LeaseholdConfig } from './config.js';
import { LeaseEvents } from './events.js';
import { createDocumentClient } from './store/dynamo.js';
import { TaskStore } from './store/task-store.js';
import type { TaskDefinition } from './tasks/define.js';
import { TaskRegistry } from './tasks/registry.js';
import { TaskSubmitter } from './tasks/task-submitter.js';

export interface TaskRuntime {
  config: LeaseholdConfig;
  doc: DynamoDBDocumentClient;
  clock: Clock;
  /** Every lifecycle step of this process's store and workers (subscribe: `events.on('task:finished', …)`). */
  events: LeaseEvents;
  store: TaskStore;
  registry: TaskRegistry;
  submitter: TaskSubmitter;
}

export interface TaskRuntimeDeps {
  clock?: Clock;
  doc?: DynamoDBDocumentClient;
  events?: LeaseEvents;
}

export function createTaskRuntime(
  config: LeaseholdConfig,
  definitions: TaskDefinition[],
  deps: TaskRuntimeDeps = {},
): TaskRuntime {
  const registry = new TaskRegistry(definitions, config);
  const doc = deps.doc ?? createDocumentClient(config);
  const clock = deps.clock ?? systemClock();
  const events = deps.events ?? new LeaseEvents();
  // Limits declared on task types apply unless the environment sets that type's limit itself.
  const store = new TaskStore({ doc, config, clock, events, definitionLimits: registry.limits() });
  const submitter = new TaskSubmitter(store, registry, config);
  return { config, doc, clock, events, store, registry, submitter };
}
