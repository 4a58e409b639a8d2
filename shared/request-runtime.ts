/**
 * The runtime of a process that only makes requests of the queue (enqueue, read, list, cancel, retry,
 * stats): the API and fire Lambdas. Its store is TaskRequests, not the whole TaskStore, so their
 * bundles leave out the lease path (claim, lease writes, recovery, the depth gauge), which they never
 * call. createTaskRuntime (task-runtime.ts) builds the same around the whole store, for processes
 * that run workers or recovery.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock, type Clock } from './clock.js';
import type { LeaseholdConfig } from './config.js';
import { LeaseEvents } from './events.js';
import { createDocumentClient } from './store/dynamo.js';
import { TaskRequests, type TaskStoreOptions } from './store/task-requests.js';
import type { TaskDefinition } from './tasks/define.js';
import { TaskRegistry } from './tasks/registry.js';
import { TaskSubmitter } from './tasks/task-submitter.js';

export interface RequestRuntime<Store extends TaskRequests = TaskRequests> {
  config: LeaseholdConfig;
  doc: DynamoDBDocumentClient;
  clock: Clock;
  /** Every lifecycle step of this process's store and workers (subscribe: `events.on('task:finished', …)`). */
  events: LeaseEvents;
  store: Store;
  registry: TaskRegistry;
  submitter: TaskSubmitter;
}

export interface TaskRuntimeDeps {
  clock?: Clock;
  doc?: DynamoDBDocumentClient;
  events?: LeaseEvents;
}

export function createRequestRuntime(
  config: LeaseholdConfig,
  definitions: TaskDefinition[],
  deps: TaskRuntimeDeps = {},
): RequestRuntime {
  return buildRuntime(config, definitions, deps, (options) => new TaskRequests(options));
}

/** One wiring for both runtimes; `newStore` picks the store class, so this module never imports TaskStore. */
export function buildRuntime<Store extends TaskRequests>(
  config: LeaseholdConfig,
  definitions: TaskDefinition[],
  deps: TaskRuntimeDeps,
  newStore: (options: TaskStoreOptions) => Store,
): RequestRuntime<Store> {
  const registry = new TaskRegistry(definitions, config);
  const doc = deps.doc ?? createDocumentClient(config);
  const clock = deps.clock ?? systemClock();
  const events = deps.events ?? new LeaseEvents();
  // Limits declared on task types apply unless the environment sets that type's limit itself.
  const store = newStore({
    doc,
    config,
    clock,
    events,
    definitionLimits: registry.limits(),
    definitionRateLimits: registry.rateLimits(),
    definitionGrouping: registry.grouping(),
  });
  const submitter = new TaskSubmitter(store, registry, config);
  return { config, doc, clock, events, store, registry, submitter };
}
