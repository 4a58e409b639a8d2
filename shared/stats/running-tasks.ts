/**
 * An owner's running tasks (RUNNING, CANCEL_REQUESTED), lease expiring soonest first, at a cost that
 * does not grow with the queue. The sweep index's sixteen lease partitions (`LEASE#<shard>`, keys only,
 * sorted by lease expiry) hold every owner's leased tasks; each gives its first
 * LEASE_KEYS_PER_PARTITION entries (one Query each, in parallel), and those tasks are read by key (one
 * BatchGetItem of at most 96) and kept when they are the owner's and still leased (the index is
 * eventually consistent). A partition that holds more than was read leaves the answer incomplete: with
 * more leases in the queue than one answer reads, some of the owner's may be missing.
 */
import { leaseSweepPartition, SHARD_COUNT } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import type { StoreContext } from '../store/context.js';
import { headTasksOfSweep } from '../store/sweep-page.js';
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
  const { items, complete } = await headTasksOfSweep<TaskItem>(
    ctx,
    leaseSweepPartition,
    LEASE_KEYS_PER_PARTITION,
  );
  const tasks = items
    .filter((item) => item.owner === owner && LEASED.has(item.status))
    .map((item) => toTask(item))
    .sort((a, b) => (a.leaseUntil ?? 0) - (b.leaseUntil ?? 0) || a.id.localeCompare(b.id));
  return { tasks, complete };
}
