/**
 * One task as the API takes it (the body of POST /tasks, or one item of POST /tasks/batch) turned into
 * the submitter's input. Both routes go through here, so a task is checked and answered the same way
 * whichever route brought it.
 */
import { ValidationError } from '../errors.js';
import type { LeaseholdConfig } from '../config.js';
import type { EnqueueInput } from '../task-inputs.js';
import { enqueueBody } from './request-schemas.js';
import { parseRequest } from './parse-request.js';

/** The enqueue input for `body` sent by `owner`; a ValidationError (400, nothing written) when a field is bad. */
export function enqueueRequest(
  body: unknown,
  owner: string,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
): EnqueueInput {
  const input = parseRequest(enqueueBody, body, 'body');
  // The type's own limit is the submitter's check; this one is the deployment's, known before the type is looked up.
  if (input.timeoutSeconds !== undefined && input.timeoutSeconds * 1000 > config.maxExecutionMs) {
    throw new ValidationError('enqueue', [
      {
        path: 'timeoutSeconds',
        message: `must be at most ${Math.floor(config.maxExecutionMs / 1000)} (the maximum execution time)`,
      },
    ]);
  }
  return {
    type: input.type,
    owner,
    ...(input.payload === undefined ? {} : { payload: input.payload }),
    ...(input.priority === undefined ? {} : { priority: input.priority }),
    ...(input.delaySeconds === undefined ? {} : { delayMs: input.delaySeconds * 1000 }),
    ...(input.runAt === undefined ? {} : { availableAt: Date.parse(input.runAt) }),
    ...(input.maxAttempts === undefined ? {} : { maxAttempts: input.maxAttempts }),
    ...(input.timeoutSeconds === undefined ? {} : { timeoutMs: input.timeoutSeconds * 1000 }),
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
    ...(input.group === undefined ? {} : { group: input.group }),
    ...(input.debounce === undefined ? {} : { debounce: input.debounce }),
  };
}
