export * from './client-types.js';
export * from './errors.js';
export { taskOf } from './batch-task.js';
