/**
 * The reference app's Lambda entry for the schedules' Scheduler target: the library's handler with this app's task types
 * (shared/lambda/fire-entry.ts). The Leasehold construct generates this same entry for the task module a
 * deployment names; the tests and the bench import this one.
 */
import { createFireHandler } from '../shared/lambda/fire-entry.js';
import { taskDefinitions } from '../tasks/catalog.js';

export const handler = createFireHandler(taskDefinitions);
