/**
 * The body of POST /tasks (and of each task of POST /tasks/batch) for an enqueue: the client's
 * options in milliseconds become the API's whole seconds (rounded up: a task is never due early), a
 * Date becomes ISO-8601, and an idempotency key is made when the caller gave none, so the request is
 * safe to send again after a lost answer.
 */
import type { IdGenerator } from '../ids.js';
import type { EnqueueOptions } from './client-types.js';

export interface EnqueueBody {
  type: string;
  payload?: unknown;
  priority?: number;
  delaySeconds?: number;
  runAt?: string;
  maxAttempts?: number;
  timeoutSeconds?: number;
  /** Absent only with `debounce` (a debounce key names the task it joins; the API takes one or the other). */
  idempotencyKey?: string;
  group?: string;
  debounce?: { key: string; windowMs: number };
}

export interface PreparedEnqueue {
  body: EnqueueBody;
  /** The key is the client's own: no other request can have used it. */
  keyMadeByClient: boolean;
}

export function enqueueBodyOf(
  type: string,
  payload: unknown,
  options: EnqueueOptions = {},
  newKey: IdGenerator,
): PreparedEnqueue {
  // A debounced enqueue carries no idempotency key: resent after a lost answer, it joins its own task.
  const keyMadeByClient = options.idempotencyKey === undefined && options.debounce === undefined;
  return {
    keyMadeByClient,
    body: {
      type,
      ...(payload === undefined ? {} : { payload }),
      ...(options.priority === undefined ? {} : { priority: options.priority }),
      ...(options.delay === undefined ? {} : { delaySeconds: wholeSecondsUp(options.delay) }),
      ...(options.runAt === undefined ? {} : { runAt: isoTime(options.runAt) }),
      ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
      ...(options.timeout === undefined ? {} : { timeoutSeconds: wholeSecondsUp(options.timeout) }),
      // A caller's key is always sent (with a debounce the API refuses it, naming `debounce`); the
      // client's own only without a debounce.
      ...(options.idempotencyKey !== undefined || options.debounce === undefined
        ? { idempotencyKey: options.idempotencyKey ?? newKey() }
        : {}),
      ...(options.group === undefined ? {} : { group: options.group }),
      ...(options.debounce === undefined ? {} : { debounce: options.debounce }),
    },
  };
}

/** Milliseconds to whole seconds, rounded up (1 ms is 1 s; -0 from a negative delay is 0). */
export function wholeSecondsUp(ms: number): number {
  return Math.ceil(ms / 1000) + 0;
}

/** A Date as ISO-8601; a string as given (the API checks it and names the field if it is wrong). */
function isoTime(value: Date | string): string {
  if (typeof value === 'string') return value;
  // An invalid Date has no ISO form: sent as its text, the API refuses it and names the field.
  return Number.isNaN(value.getTime()) ? String(value) : value.toISOString();
}
