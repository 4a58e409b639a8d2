/**
 * One task checked against its type before anything is written, the same way wherever it comes from
 * (an enqueue, a task of a flow, a child from a handler): a registered type, its payload against the
 * type's schema, its timeout within the type's, and the type's maxAttempts filled in when it gives none.
 */
import type { LeaseholdConfig } from '../config.js';
import { ValidationError, type InputProblem } from '../errors.js';
import { typeTimeoutMs } from '../invocation-budget.js';
import type { TaskRegistry } from './registry.js';

/** The fields of a task that its type constrains. */
export interface TypedTask {
  type: string;
  payload?: unknown;
  timeoutMs?: number | undefined;
  maxAttempts?: number | undefined;
}

/**
 * `task` with its type's maxAttempts filled in, and its problems, each path relative to the task
 * (`type`, `payload.n`, `timeoutMs`). `payload` is what the schema checks: a flow's or a handler's
 * child left without one is checked as the null its handler would be given.
 */
export function checkTask<T extends TypedTask>(
  registry: Pick<TaskRegistry, 'parsePayload'>,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
  task: T,
  payload: unknown = task.payload,
): { task: T; problems: InputProblem[] } {
  let definition;
  try {
    ({ definition } = registry.parsePayload(task.type, payload));
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return { task, problems: error.problems };
  }
  const problems: InputProblem[] = [];
  // A task may ask for less time than its type allows, never more: the worker's claim rule checks the type's.
  const limit = typeTimeoutMs(definition.timeoutMs, config);
  if (task.timeoutMs !== undefined && task.timeoutMs > limit)
    problems.push({
      path: 'timeoutMs',
      message: `must be at most ${limit} ms, the timeout of task type ${task.type}`,
    });
  const filled =
    task.maxAttempts === undefined && definition.maxAttempts !== undefined
      ? { ...task, maxAttempts: definition.maxAttempts }
      : task;
  return { task: filled, problems };
}
