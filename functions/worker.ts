/**
 * The reference app's Lambda entry for the worker: the library's handler with this app's task types
 * (shared/lambda/worker-entry.ts). The Leasehold construct generates this same entry for the task module a
 * deployment names; the tests and the bench import this one.
 */
import { createWorkerHandler } from '../shared/lambda/worker-entry.js';
import { taskDefinitions } from '../tasks/catalog.js';

export const handler = createWorkerHandler(taskDefinitions);
