/** Builds everything a process needs from its environment, once (Lambda cold start, local stack start). */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from './clock.js';
import { loadConfig, type LeaseholdConfig } from './config.js';
import { createDocumentClient } from './store/dynamo.js';
import { TaskStore } from './store/task-store.js';
import { taskDefinitions } from './tasks/catalog.js';
import type { TaskDefinition } from './tasks/define.js';
import { TaskRegistry } from './tasks/registry.js';
import { TaskQueue } from './tasks/task-queue.js';

export interface Leasehold {
  config: LeaseholdConfig;
  doc: DynamoDBDocumentClient;
  store: TaskStore;
  registry: TaskRegistry;
  queue: TaskQueue;
}

export interface LeaseholdOptions {
  definitions?: TaskDefinition[];
  clock?: Clock;
  doc?: DynamoDBDocumentClient;
}

export function createLeasehold(env: Record<string, string | undefined> = process.env, options: LeaseholdOptions = {}): Leasehold {
  const base = loadConfig(env);
  const registry = new TaskRegistry(options.definitions ?? taskDefinitions, base);
  // Limits declared on task types apply unless the environment sets that type's limit itself.
  const config: LeaseholdConfig = { ...base, typeConcurrency: { ...registry.limits(), ...base.typeConcurrency } };
  const doc = options.doc ?? createDocumentClient(config);
  const store = new TaskStore({ doc, config, ...(options.clock ? { clock: options.clock } : {}) });
  return { config, doc, store, registry, queue: new TaskQueue(store, registry, config) };
}
