/** Builds one task of a flow from a definition, so its payload is checked at compile time (as `taskOf` does for a batch). */
import type * as z from 'zod';
import type { TaskDefinition } from '../tasks/define.js';
import type { FlowChildTask } from './client-types.js';

export function flowTaskOf<S extends z.ZodType, R>(
  definition: TaskDefinition<S, R>,
  payload: z.input<S>,
  fields: Pick<FlowChildTask, 'priority' | 'maxAttempts' | 'timeoutSeconds' | 'group' | 'optional'> = {},
): FlowChildTask<z.input<S>, Awaited<R>> {
  return { type: definition.name, payload, ...fields };
}
