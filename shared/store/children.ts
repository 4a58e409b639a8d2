/**
 * A running parent's side of a flow: enqueueing children from its handler, ending its attempt to wait
 * for them, and reading them when it runs again (ctx.enqueueChildren, ctx.waitForChildren, ctx.children).
 *
 * Order of writes, and the race each closes:
 * 1. the parent's child count is raised first, under its lease (childrenRaised), so a child that ends
 *    before the parent waits is counted against a count that includes it;
 * 2. then the children are put, numbered from the round's base: an attempt retried before it waited
 *    gives the same numbers, so the same ids (childTaskId), and meets the children written before;
 * 3. the wait (waitingForChildren) gives the attempt back and leaves the lease; when every child was
 *    counted already, the parent is made ready at once (settleReadiness).
 */
import * as z from 'zod';
import { forEachBounded } from '../bounded-work.js';
import { FLOW_PARALLEL_PUTS, MAX_CHILDREN } from '../flow-rules.js';
import { flowTaskFields } from '../flow-inputs.js';
import { childTaskId } from '../ids.js';
import { rotationForTask } from '../group-rules.js';
import { LeaseLostError, ValidationError } from '../errors.js';
import { parseInput, type Lease } from '../task-inputs.js';
import type { StoreContext } from './context.js';
import { settleReadiness } from './child-ends.js';
import { childrenRaised, placedAsChild, waitingForChildren } from './flow-transitions.js';
import { newTask, putNewTask, type ParsedEnqueue } from './new-task.js';
import { readTaskItem } from './task-reads.js';
import { toTask, type TaskItem } from './task-item.js';
import type { Task } from '../task-model.js';
import { cancelledMeanwhile, finishCancel, settleUnderLease, writeUnderLease } from './lease-writes.js';
import { releaseSlots } from './slots.js';

/** Children of one ctx.enqueueChildren call, checked whole before anything is written. */
export const childrenInput = z
  .array(flowTaskFields)
  .min(1, 'must list at least one child')
  .max(MAX_CHILDREN, `must list at most ${MAX_CHILDREN} children`);
export type ChildInput = z.input<typeof flowTaskFields>;

export interface RaisedChildren {
  /** The ids of the children, in the order given. */
  ids: string[];
  /** The parent's child count after this call. */
  count: number;
}

/**
 * Writes `children` of the parent held by `lease`, numbered from `from` (the round's base plus what this
 * attempt enqueued before). `known`: the parent's child count as its holder knows it.
 */
export interface EnqueueChildrenInput {
  lease: Lease;
  /** The parent task's owner: its children's. */
  parentOwner: string;
  children: ChildInput[];
  from: number;
  /** The parent's child count as its holder knows it; absent after a call that failed part way (read). */
  known?: number;
}

export async function enqueueChildren(
  ctx: StoreContext,
  input: EnqueueChildrenInput,
): Promise<RaisedChildren> {
  const children = parseInput(childrenInput, 'enqueueChildren', input.children);
  const { lease, from } = input;
  const known = input.known ?? (await readTaskItem(ctx, lease.taskId))?.childCount ?? 0;
  const to = from + children.length;
  if (to > MAX_CHILDREN)
    throw new ValidationError('enqueueChildren', [
      {
        path: 'children',
        message: `would give the task ${to} children; a task may have at most ${MAX_CHILDREN}`,
      },
    ]);
  // A rotated child (a group, or a type with fair shares) waits in a rotation only a marked type's
  // claimers read, and the worker may not mark types (an operator's partition): refused, nothing written.
  const rotated = children.flatMap((c, i) =>
    rotationForTask(ctx.typeGrouping, { type: c.type, owner: input.parentOwner, group: c.group }) ===
    undefined
      ? []
      : [
          {
            path: c.group === undefined ? `${i}.type` : `${i}.group`,
            message: `a child enqueued by a handler cannot wait in a rotation (a group, or type ${c.type} with fairShares): send grouped work as a flow (POST /flows) or enqueue it through the API`,
          },
        ],
  );
  if (rotated.length > 0) throw new ValidationError('enqueueChildren', rotated);
  const now = ctx.clock.now();
  // Only ever up: a retried attempt's children below `known` are there already (their puts are refused).
  if (to > known) await writeUnderLease(ctx, lease, childrenRaised(lease, known, to, now), { resends: 2 });
  const ids = children.map((_, i) => childTaskId(lease.taskId, from + i));
  await forEachBounded(children.length, FLOW_PARALLEL_PUTS, async (i) => {
    const { optional, ...fields } = children[i]!;
    const enqueue: ParsedEnqueue = { ...fields, owner: input.parentOwner, priority: fields.priority ?? 0 };
    // Never older than its parent, whatever this worker's clock says; marked with the parent's life.
    const built = newTask(ctx, enqueue, ids[i]!, now, Math.max(now, lease.createdAt));
    const record = built.record as TaskItem;
    record.leaseToken = now;
    record.parentId = lease.taskId;
    record.childIndex = from + i;
    record.parentCreatedAt = lease.createdAt;
    if (optional) record.optional = true;
    // Refused: written by an earlier attempt of this parent (same number, same id). A child of an
    // earlier life of the parent's id (its key used again after it expired) is replaced.
    built.placed = placedAsChild(built.placed, lease.createdAt);
    await putNewTask(ctx, built);
  });
  return { ids, count: Math.max(known, to) };
}

/**
 * Ends the holder's attempt to wait for the parent's children; makes the parent ready at once when they
 * have all been counted already. The task as it stands after.
 */
export async function waitForChildren(
  ctx: StoreContext,
  input: { lease: Lease; childCount: number },
): Promise<Task> {
  const { lease, childCount } = input;
  const now = ctx.clock.now();
  const t = waitingForChildren(lease, childCount, now, now + ctx.config.flowCheckMs);
  let item: TaskItem;
  try {
    item = await settleUnderLease(ctx, lease, t);
  } catch (error) {
    // A cancel requested meanwhile refuses the wait (it needs RUNNING): the holder finishes the cancel.
    if (cancelledMeanwhile(error, lease)) return finishCancel(ctx, { lease });
    const ours = error instanceof LeaseLostError ? await waitApplied(ctx, lease, childCount) : undefined;
    if (!ours) throw error;
    item = ours;
  }
  const moved = await settleReadiness(ctx, item).catch(() => undefined);
  return toTask(moved ?? item);
}

/**
 * The wait applied although it was refused: its answer was lost and a child's count wrote the item
 * before the resend (a new write id, so the read-back could not tell). This claim's token, no lease, and
 * the base this wait set (its attempt enqueued children, so no other write leaves base = count).
 */
async function waitApplied(
  ctx: StoreContext,
  lease: Lease,
  childCount: number,
): Promise<TaskItem | undefined> {
  const current = await readTaskItem(ctx, lease.taskId);
  const waited =
    current !== undefined &&
    current.leaseToken === lease.token &&
    current.leaseOwner === undefined &&
    current.childBase === childCount;
  if (!waited) return undefined;
  await releaseSlots(ctx, lease.owner, lease.slots).catch(() => undefined);
  return current;
}

export { readChildren, type ChildView } from './children-reads.js';
