/**
 * One task of the direct client turned into the submitter's input, by the API's own route: the options
 * become the body the HTTP client sends (enqueueBodyOf) and go through the API's `enqueueRequest`, so a
 * task is refused for the same reasons, naming the same fields (`delaySeconds`, `timeoutSeconds`),
 * whichever client sent it. Two differences: times keep their milliseconds (over HTTP they travel in
 * whole seconds, so a delay of -1 ms, sent as 0 s, is refused here), and no idempotency key is made
 * when none is given (the HTTP client makes one so it can resend after a lost answer; the store's
 * own write already tells its echo from another writer's).
 */
import type { LeaseholdConfig } from '../config.js';
import { enqueueRequest } from '../api/enqueue-request.js';
import type { EnqueueInput } from '../task-inputs.js';
import type { EnqueueOptions } from './client-types.js';
import { enqueueBodyOf } from './enqueue-body.js';

const NO_KEY = '';

export function directEnqueueInput(
  type: string,
  payload: unknown,
  options: EnqueueOptions,
  owner: string,
  config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
): EnqueueInput {
  const { body, keyMadeByClient } = enqueueBodyOf(type, payload, options, () => NO_KEY);
  const { idempotencyKey, ...rest } = body;
  const input = enqueueRequest(keyMadeByClient ? rest : { ...rest, idempotencyKey }, owner, config);
  return {
    ...input,
    ...(options.delay === undefined ? {} : { delayMs: options.delay }),
    ...(options.timeout === undefined ? {} : { timeoutMs: options.timeout }),
  };
}
