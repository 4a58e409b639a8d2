/**
 * Enqueueing through the registry: an unknown type or a payload its schema refuses is turned away
 * here, at enqueue time, with nothing written, instead of failing later at run time.
 */
import type { LeaseholdConfig } from '../config.js';
import { ValidationError } from '../errors.js';
import type { EnqueueResult } from '../store/enqueue.js';
import type { EnqueueInput } from '../task-inputs.js';
import type { TaskCommands } from '../store/ports.js';
import type { TaskRegistry } from './registry.js';
import { typeTimeoutMs } from '../invocation-budget.js';

export class TaskSubmitter {
  constructor(
    private readonly store: Pick<TaskCommands, 'enqueue'>,
    readonly registry: TaskRegistry,
    private readonly config: Pick<LeaseholdConfig, 'maxExecutionMs'>,
  ) {}

  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    const { definition } = this.registry.parsePayload(input.type, input.payload);
    // A task may ask for less time than its type allows, never more: the worker's claim rule checks the type's.
    const limit = typeTimeoutMs(definition.timeoutMs, this.config);
    if (input.timeoutMs !== undefined && input.timeoutMs > limit) {
      throw new ValidationError('enqueue', [
        { path: 'timeoutMs', message: `must be at most ${limit} ms, the timeout of task type ${input.type}` },
      ]);
    }
    // The stored payload is the one given: the handler's schema parses it again (with its transforms) at run time.
    return this.store.enqueue({
      ...input,
      ...(input.maxAttempts === undefined && definition.maxAttempts !== undefined
        ? { maxAttempts: definition.maxAttempts }
        : {}),
    });
  }
}
