/** The API's retry: a FAILED or CANCELLED task goes back to the queue with a fresh attempt budget. */
import { recordingCost } from './recorded-cost.js';
import { TaskNotFoundError, TaskStateConflictError } from '../errors.js';
import { taskKey } from '../table-layout.js';
import { isTerminal, TaskStatus, type Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { parseInput, taskRefInput } from '../task-inputs.js';
import { extendPayload, payloadExtension } from './payload-lifetime.js';
import { readTaskItem } from './task-reads.js';
import { toTask, type TaskItem } from './task-item.js';
import { asUpdate, retried } from './transitions.js';

const RETRYABLE: readonly TaskStatus[] = [TaskStatus.FAILED, TaskStatus.CANCELLED];

export async function retryTask(ctx: StoreContext, rawInput: { id: string; owner?: string }): Promise<Task> {
  const { id, owner } = parseInput(taskRefInput, 'retry', rawInput);
  const item = await readTaskItem(ctx, id);
  if (!item || (owner !== undefined && item.owner !== owner)) throw new TaskNotFoundError(id);
  const refuse = (current: TaskItem) =>
    new TaskStateConflictError(
      `Task ${id} is ${current.status}; only FAILED or CANCELLED tasks can be retried.`,
      toTask(current),
    );
  if (!RETRYABLE.includes(item.status)) throw refuse(item);
  // A child's end was counted on its parent once: while the parent has not ended, a retried child's new
  // end could not count, and the parent would go on from the old one. The parent is what to retry.
  if (item.parentId !== undefined) {
    const parent = await readTaskItem(ctx, item.parentId);
    if (parent && !isTerminal(parent.status))
      throw new TaskStateConflictError(
        `Task ${id} is a child of task ${parent.id}, which is ${parent.status}: its end is counted already. Retry the parent once it has ended.`,
        toTask(item),
      );
  }
  const now = ctx.clock.now();
  // The payload kept apart must outlive the run this retry allows: moved first (PayloadMissingError,
  // 409, when it is gone already: a retry that could only fail is refused, not accepted).
  const payloadUntil = payloadExtension(item, now, now, ctx.config);
  if (payloadUntil !== undefined) await extendPayload(ctx, item, payloadUntil, 'request');
  // Conditioned on the status as read: a second retry, or anything that moved the task since, is refused.
  const written = await conditionalUpdate<TaskItem>(
    writeTargetOf(ctx, 'request'),
    taskKey(id),
    asUpdate(recordingCost(retried(item, now, payloadUntil), item, undefined)),
    { needCurrent: true },
  );
  if (written.applied) return toTask(written.item);
  if (!written.current) throw new TaskNotFoundError(id);
  throw refuse(written.current);
}
