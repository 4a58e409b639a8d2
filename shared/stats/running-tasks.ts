/**
 * An owner's running tasks (RUNNING, CANCEL_REQUESTED), lease expiring soonest first, at a cost that
 * does not grow with the queue. The sweep index's sixteen lease partitions (`LEASE#<shard>`, keys only,
 * sorted by lease expiry) hold every owner's leased tasks; each gives its first
 * LEASE_KEYS_PER_PARTITION entries (one Query each, in parallel), and those tasks are read by key (one
 * BatchGetItem of at most 96) and kept when they are the owner's and still leased (the index is
 * eventually consistent). A partition that holds more than was read leaves the answer incomplete: with
 * more leases in the queue than one answer reads, some of the owner's may be missing.
 */
import { leaseSweepPartition, SHARD_COUNT, taskIdFromPk, taskKey } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import { requestPathDeadlineMs, type StoreContext } from '../store/context.js';
import { deadline } from '../store/dynamo.js';
import { sweepPage } from '../store/sweep-page.js';
import { readItems } from '../store/task-reads.js';
import { toTask, type TaskItem } from '../store/task-item.js';

/** Lease keys read per partition: 16 × 6 = 96 tasks, one BatchGetItem (at most 100 keys). */
export const LEASE_KEYS_PER_PARTITION = 6;
/** The most leased tasks one read looks at, every owner's together. */
export const RUNNING_READ_LIMIT = LEASE_KEYS_PER_PARTITION * SHARD_COUNT;

const LEASED = new Set<string>([TaskStatus.RUNNING, TaskStatus.CANCEL_REQUESTED]);

export interface RunningTasks {
  /** As a list shows tasks: without payload or result. */
  tasks: Task[];
  /** False when a lease partition held more entries than were read. */
  complete: boolean;
}

export async function readRunningTasks(ctx: StoreContext, owner: string): Promise<RunningTasks> {
  // One entry more than is used: whether it comes back says whether the partition holds more.
  const pages = await Promise.all(
    Array.from({ length: SHARD_COUNT }, (_, shard) =>
      sweepPage(
        ctx,
        {
          partition: leaseSweepPartition(shard),
          bound: Number.MAX_SAFE_INTEGER,
          limit: LEASE_KEYS_PER_PARTITION + 1,
        },
        deadline(requestPathDeadlineMs(ctx)),
      ),
    ),
  );
  const keys = pages.flatMap((page) =>
    page.entries.slice(0, LEASE_KEYS_PER_PARTITION).map((entry) => taskKey(taskIdFromPk(entry.pk))),
  );
  const items =
    keys.length === 0
      ? []
      : await readItems<TaskItem>(ctx, keys, { consistent: false, deadlineMs: requestPathDeadlineMs(ctx) });
  const tasks = items
    .filter((item) => item.owner === owner && LEASED.has(item.status))
    .map((item) => toTask(item))
    .sort((a, b) => (a.leaseUntil ?? 0) - (b.leaseUntil ?? 0) || a.id.localeCompare(b.id));
  return { tasks, complete: pages.every((page) => page.entries.length <= LEASE_KEYS_PER_PARTITION) };
}
