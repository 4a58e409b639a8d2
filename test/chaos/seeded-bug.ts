/**
 * The checker's proof that it can fail: a lease store whose completion drops the fencing token from
 * its condition (it only asks that the task be RUNNING), so a holder that outlived its lease writes
 * over the task's new holder. Test-only: production code has no switch for it.
 */
import { storeResult } from '../../shared/store/body-layout.js';
import { LeaseLostError } from '../../shared/errors.js';
import { conditionalUpdate } from '../../shared/store/conditional-write.js';
import { hasStatus } from '../../shared/store/conditions.js';
import { writeTargetOf } from '../../shared/store/context.js';
import type { LeaseStore } from '../../shared/store/ports.js';
import { releaseSlots } from '../../shared/store/slots.js';
import { toTask, type TaskItem } from '../../shared/store/task-item.js';
import type { TaskStore } from '../../shared/store/task-store.js';
import { asUpdate, completed } from '../../shared/store/transitions.js';
import { taskKey } from '../../shared/table-layout.js';
import { TaskStatus } from '../../shared/task-model.js';

export function completingWithoutToken(store: TaskStore): LeaseStore {
  const { ctx } = store;
  return {
    claim: (input, memory) => store.claim(input, memory),
    renew: (input) => store.renew(input),
    fail: (input) => store.fail(input),
    release: (input) => store.release(input),
    finishCancel: (input) => store.finishCancel(input),
    promote: (input) => store.promote(input),
    complete: async ({ lease, result }) => {
      const edge = completed(
        lease,
        ctx.clock.now(),
        storeResult(JSON.stringify(result ?? null), lease.token).fields,
        ctx.config,
      );
      // The bug: the fence (the edge's last condition part) replaced by a status check.
      const written = await conditionalUpdate<TaskItem>(
        writeTargetOf(ctx),
        taskKey(lease.taskId),
        asUpdate({ ...edge, require: [...edge.require.slice(0, -1), hasStatus(TaskStatus.RUNNING)] }),
        { needCurrent: true },
      );
      if (!written.applied)
        throw new LeaseLostError(lease.taskId, lease.token, written.current && toTask(written.current));
      await releaseSlots(ctx, lease.owner, lease.slots).catch(() => undefined);
      return toTask(written.item);
    },
  };
}
