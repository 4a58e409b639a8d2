/** Builds one task of `enqueueMany` from a definition, so its payload is checked at compile time. */
import type * as z from 'zod';
import type { TaskDefinition } from '../tasks/define.js';
import type { BatchTask, EnqueueOptions } from './client-types.js';

export function taskOf<S extends z.ZodType, R>(
  definition: TaskDefinition<S, R>,
  payload: z.input<S>,
  options?: EnqueueOptions,
): BatchTask {
  return { type: definition.name, payload, ...(options ? { options } : {}) };
}
