/**
 * The reference app's Lambda entry for the HTTP API: the library's handler with this app's task types
 * (shared/lambda/api-entry.ts). The Leasehold construct generates this same entry for the task module a
 * deployment names; the tests and the bench import this one.
 */
import { createApiHandler } from '../shared/lambda/api-entry.js';
import { taskDefinitions } from '../tasks/catalog.js';

export const handler = createApiHandler(taskDefinitions);
