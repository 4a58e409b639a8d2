/**
 * The task types this deployment runs: the application's own content, outside the Leasehold core (shared/). This is the one file to edit to add your own: the worker
 * Lambda, the API (which refuses unknown types and bad payloads at enqueue) and the local stack all
 * import it. Define a type with `defineTask({ name, schema, handler, ... })` and add it to the list.
 */
import type { TaskDefinition } from '../shared/tasks/define.js';
import { demoTasks } from './demo.js';

export const taskDefinitions: TaskDefinition[] = [...demoTasks];
