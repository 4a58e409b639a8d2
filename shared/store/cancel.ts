/**
 * Cancel requests from users: QUEUED (or a parent waiting for its children) ends CANCELLED at once;
 * RUNNING becomes CANCEL_REQUESTED for its holder to act on. A parent's children are cancelled after it.
 */
import { recordingCost } from './recorded-cost.js';
import { TaskNotFoundError, TaskStateConflictError } from '../errors.js';
import { taskKey } from '../table-layout.js';
import { isTerminal, TaskStatus, type Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { parseInput, taskRefInput } from '../task-inputs.js';
import { readTaskItem } from './task-reads.js';
import { toTask, type TaskItem } from './task-item.js';
import { asUpdate, cancelledQueued, cancelRequested } from './transitions.js';
import { LeaseholdError } from '../errors.js';
import { forEachBounded } from '../bounded-work.js';
import { childTaskId } from '../ids.js';
import { cancelledWaiting } from './flow-transitions.js';
import { countChildEnd } from './child-ends.js';

export async function requestCancel(
  ctx: StoreContext,
  rawInput: { id: string; owner?: string },
): Promise<Task> {
  const { id, owner } = parseInput(taskRefInput, 'requestCancel', rawInput);
  const task = await cancelTask(ctx, id, owner);
  // A parent's cancel reaches its children: those waiting end CANCELLED, those running are asked to stop.
  if (task.children) await cancelChildren(ctx, id, task.children.total);
  return task;
}

/** Children a cancel works on at once (each is a read and a write, and its own children after). */
const PARALLEL_CHILD_CANCELS = 10;

async function cancelChildren(ctx: StoreContext, parentId: string, count: number): Promise<void> {
  await forEachBounded(count, PARALLEL_CHILD_CANCELS, async (i) => {
    try {
      await requestCancel(ctx, { id: childTaskId(parentId, i) });
    } catch (error) {
      // Ended already, or never written (a flow's send that failed part way): nothing to cancel.
      if (error instanceof TaskStateConflictError || error instanceof TaskNotFoundError) return;
      throw error;
    }
  });
}

async function cancelTask(ctx: StoreContext, id: string, owner: string | undefined): Promise<Task> {
  // The status can move between our read and our write (a claim, a completion); each write is
  // conditioned on the status it was chosen for, and a refused one is decided again from a fresh read.
  let item = await readTaskItem(ctx, id);
  for (let round = 0; round < 5; round++) {
    if (!item || (owner !== undefined && item.owner !== owner)) throw new TaskNotFoundError(id);
    if (isTerminal(item.status))
      throw new TaskStateConflictError(
        `Task ${id} already ended ${item.status}; only QUEUED or RUNNING tasks can be cancelled.`,
        toTask(item),
      );
    if (item.status === TaskStatus.CANCEL_REQUESTED) return toTask(item);
    const now = ctx.clock.now();
    const t =
      item.status === TaskStatus.QUEUED
        ? cancelledQueued(now, ctx.config)
        : item.status === TaskStatus.WAITING_CHILDREN
          ? cancelledWaiting(now, ctx.config)
          : cancelRequested(now);
    const written = await conditionalUpdate<TaskItem>(
      writeTargetOf(ctx, 'request'),
      taskKey(id),
      asUpdate(recordingCost(t, item, undefined)),
      { needCurrent: true },
    );
    if (written.applied) {
      // A queued task ends here, at once: the request's process counts it (stats/outcome-counter.ts).
      if (written.item.status === TaskStatus.CANCELLED)
        ctx.events.emit('task:finished', {
          taskId: id,
          type: written.item.type,
          status: 'CANCELLED',
          by: 'request',
          owner: written.item.owner,
        });
      // A child's end counts on its parent (best effort: recovery's look at the parent makes a missed count).
      if (written.item.status === TaskStatus.CANCELLED)
        await countChildEnd(ctx, written.item).catch(() => undefined);
      return toTask(written.item);
    }
    item = written.current;
  }
  throw new CancelContendedError(id);
}

/** The task changed status under every attempt to cancel it (a claim, a completion, again and again). */
export class CancelContendedError extends LeaseholdError {
  override name = 'CancelContendedError';
  override readonly code = 'CANCEL_CONTENDED';
  /** A race with a concurrent request: sent again, it settles. */
  override readonly status = 409;
  constructor(readonly taskId: string) {
    super(`Task ${taskId} kept changing status while being cancelled; send the request again.`);
  }
}
