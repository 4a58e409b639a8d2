/**
 * What users import. Define task types, handle the errors a handler sees, embed a worker, subscribe to
 * lifecycle events, take distributed locks, or build the runtime in a process of their own.
 */
// Defining tasks, and what a handler sees.
export {
  defineTask,
  WaitForChildren,
  type ChildTask,
  type ChildView,
  type TaskContext,
  type TaskDefinition,
  type TaskLogger,
} from './tasks/define.js';
export { StepFencedError } from './store/steps.js';
export { TaskAbortedError, type AbortReason } from './worker/outcome.js';
export {
  LeaseholdError,
  NonRetryableError,
  ValidationError,
  ConfigError,
  TaskNotFoundError,
  IdempotencyConflictError,
  TaskStateConflictError,
  LeaseLostError,
  FlowsUnsupportedError,
  type InputProblem,
} from './errors.js';
export { WriteOutcomeUnknownError } from './store/conditional-write.js';

// Tasks as the store returns them.
export { TaskStatus, TERMINAL_STATUSES, type Task } from './task-model.js';

// Building the runtime and embedding a worker.
export { loadConfig, type LeaseholdConfig, type ConfigInput } from './config.js';
export { createTaskRuntime, type TaskRuntime, type TaskRuntimeDeps } from './task-runtime.js';
export { createLeasehold, type Leasehold, type LeaseholdDeps } from './app.js';
// A process that only enqueues, reads, cancels and retries (an API): the store without the lease path.
export { createRequestRuntime, type RequestRuntime } from './request-runtime.js';
export { createRequestLeasehold, type RequestLeasehold } from './request-app.js';
export { Worker, type WorkerOptions, type RunOptions, type RunSummary } from './worker/worker.js';
export { LeaseEvents, type LeaseEventMap, type LeaseEventName } from './events.js';
export { TaskStore, type TaskStoreOptions } from './store/task-store.js';
export { TaskRequests } from './store/task-requests.js';
export type { LeaseStore, TaskReads, TaskCommands, Sweeper } from './store/ports.js';
export { createDocumentClient } from './store/dynamo.js';
export { ensureTable } from './store/table-setup.js';

// Distributed locks with fencing tokens.
export {
  LockClient,
  LockLostError,
  LockNotAcquiredError,
  type Lock,
  type LockOptions,
} from './locks/lock-client.js';
