/** Redrive: a FAILED or CANCELLED task goes back to the queue with a fresh attempt budget. */
import { TaskNotFoundError, TaskStateConflictError } from '../errors.js';
import { INDEX, readyPartition, readySortKey, taskKey, TTL_ATTRIBUTE } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { hasStatus } from './conditions.js';
import { conditionalUpdate } from './conditional-write.js';
import { Expression } from './expression.js';
import { parseInput, taskRefInput } from './inputs.js';
import { readTaskItem } from './task-reads.js';
import { toTask, type TaskItem } from './task-item.js';

const REDRIVABLE: readonly TaskStatus[] = [TaskStatus.FAILED, TaskStatus.CANCELLED];

export async function redrive(ctx: StoreContext, rawInput: { id: string; owner?: string }): Promise<Task> {
  const { id, owner } = parseInput(taskRefInput, 'redrive', rawInput);
  const item = await readTaskItem(ctx, id);
  if (!item || (owner !== undefined && item.owner !== owner)) throw new TaskNotFoundError(id);
  const refuse = (current: TaskItem) =>
    new TaskStateConflictError(`Task ${id} is ${current.status}; only FAILED or CANCELLED tasks can be retried.`, toTask(current));
  if (!REDRIVABLE.includes(item.status)) throw refuse(item);
  const now = ctx.clock.now();
  const e = new Expression()
    // A second redrive, or anything else that moved the task since our read, makes this fail.
    .require(hasStatus(item.status))
    .assign({
      status: TaskStatus.QUEUED,
      attempts: 0,
      availableAt: now,
      updatedAt: now,
      [INDEX.ready.partition]: readyPartition(item.type, item.shard, item.priority),
      [INDEX.ready.sort]: readySortKey(item.priority, now, item.createdAt, item.id),
      finishedAt: undefined,
      [TTL_ATTRIBUTE]: undefined,
      result: undefined,
      error: undefined,
      progress: undefined,
      progressNote: undefined,
    });
  const written = await conditionalUpdate<TaskItem>(writeTargetOf(ctx, 'request'), taskKey(id), e, { needCurrent: true });
  if (written.applied) return toTask(written.item);
  if (!written.current) throw new TaskNotFoundError(id);
  throw refuse(written.current);
}
