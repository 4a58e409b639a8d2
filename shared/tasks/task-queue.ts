/**
 * Enqueueing through the registry: an unknown type or a payload its schema refuses is turned away
 * here, at enqueue time, with nothing written, instead of failing later at run time.
 */
import type { LeaseholdConfig } from '../config.js';
import { ValidationError } from '../errors.js';
import type { EnqueueResult } from '../store/enqueue.js';
import type { EnqueueInput } from '../store/inputs.js';
import type { TaskStore } from '../store/task-store.js';
import type { TaskRegistry } from './registry.js';

export class TaskQueue {
  constructor(
    readonly store: TaskStore,
    readonly registry: TaskRegistry,
    private readonly config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
  ) {}

  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    const { definition } = this.registry.parsePayload(input.type, input.payload);
    if (input.timeoutMs !== undefined && input.timeoutMs > this.config.maxExecutionMs) {
      throw new ValidationError('enqueue', [{ path: 'timeoutMs', message: `must be at most the maximum execution time (${this.config.maxExecutionMs} ms)` }]);
    }
    // The stored payload is the one given: the handler's schema parses it again (with its transforms) at run time.
    return this.store.enqueue({
      ...input,
      ...(input.maxAttempts === undefined && definition.maxAttempts !== undefined ? { maxAttempts: definition.maxAttempts } : {}),
    });
  }
}
