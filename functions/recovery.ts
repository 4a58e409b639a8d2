/**
 * The reference app's Lambda entry for recovery: the library's handler with this app's task types
 * (shared/lambda/recovery-entry.ts). The Leasehold construct generates this same entry for the task module a
 * deployment names; the tests and the bench import this one.
 */
import { createRecoveryHandler } from '../shared/lambda/recovery-entry.js';
import { taskDefinitions } from '../tasks/catalog.js';

export const handler = createRecoveryHandler(taskDefinitions);
