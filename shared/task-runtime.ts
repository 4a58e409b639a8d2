/**
 * The part of Leasehold every process needs (configuration, task registry, store, queue), without
 * schedules: the worker and recovery Lambdas import only this, so their bundles leave out the
 * Scheduler client and the cron evaluator.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock, type Clock } from './clock.js';
import { loadConfig, type LeaseholdConfig } from './config.js';
import { createDocumentClient } from './store/dynamo.js';
import { TaskStore } from './store/task-store.js';
import { taskDefinitions } from './tasks/catalog.js';
import type { TaskDefinition } from './tasks/define.js';
import { TaskRegistry } from './tasks/registry.js';
import { TaskQueue } from './tasks/task-queue.js';

export interface TaskRuntime {
  config: LeaseholdConfig;
  doc: DynamoDBDocumentClient;
  clock: Clock;
  store: TaskStore;
  registry: TaskRegistry;
  queue: TaskQueue;
}

export interface TaskRuntimeOptions {
  definitions?: TaskDefinition[];
  clock?: Clock;
  doc?: DynamoDBDocumentClient;
  /** Told before each claim or recovery write is sent (fault-testing histories). */
  onIntent?: (op: 'claim' | 'recover', taskId: string) => void;
}

export function createTaskRuntime(env: Record<string, string | undefined> = process.env, options: TaskRuntimeOptions = {}): TaskRuntime {
  const base = loadConfig(env);
  const registry = new TaskRegistry(options.definitions ?? taskDefinitions, base);
  // Limits declared on task types apply unless the environment sets that type's limit itself.
  const config: LeaseholdConfig = { ...base, typeConcurrency: { ...registry.limits(), ...base.typeConcurrency } };
  const doc = options.doc ?? createDocumentClient(config);
  const clock = options.clock ?? systemClock(config.clockOffsetMs);
  const store = new TaskStore({ doc, config, clock, ...(options.onIntent ? { onIntent: options.onIntent } : {}) });
  const queue = new TaskQueue(store, registry, config);
  return { config, doc, clock, store, registry, queue };
}
