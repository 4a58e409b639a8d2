/**
 * The part of Leasehold every process needs (store, task registry, queue, lifecycle stream), built
 * from a parsed configuration and the task definitions, without schedules: the worker and recovery
 * Lambdas import only this, so their bundles leave out the Scheduler client and the cron evaluator.
 * Entry points (functions/*.ts, the local stack) parse the configuration once and bring the task
 * catalog; the core never imports user content. A process that never claims or recovers builds
 * createRequestRuntime (request-runtime.ts) instead.
 */
import type { LeaseholdConfig } from './config.js';
import { buildRuntime, type RequestRuntime, type TaskRuntimeDeps } from './request-runtime.js';
import { TaskStore } from './store/task-store.js';
import type { TaskDefinition } from './tasks/define.js';

export type { TaskRuntimeDeps };

/** The runtime around the whole store: the lease path, recovery and the gauges besides requests. */
export type TaskRuntime = RequestRuntime<TaskStore>;

export function createTaskRuntime(
  config: LeaseholdConfig,
  definitions: TaskDefinition[],
  deps: TaskRuntimeDeps = {},
): TaskRuntime {
  return buildRuntime(config, definitions, deps, (options) => new TaskStore(options));
}
