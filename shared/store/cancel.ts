/** Cancel requests from users: QUEUED ends CANCELLED at once; RUNNING becomes CANCEL_REQUESTED for its holder to act on. */
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

export async function requestCancel(
  ctx: StoreContext,
  rawInput: { id: string; owner?: string },
): Promise<Task> {
  const { id, owner } = parseInput(taskRefInput, 'requestCancel', rawInput);
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
    const t = item.status === TaskStatus.QUEUED ? cancelledQueued(now, ctx.config) : cancelRequested(now);
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
