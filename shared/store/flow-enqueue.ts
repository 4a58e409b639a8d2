/**
 * A flow from the API: every task of it checked first (flow-inputs.ts: a bad one writes nothing), then
 * written top down, parents before their children, so a child that ends at once is counted on a parent
 * that is there. A parent is written WAITING_CHILDREN with its child count; a leaf QUEUED. N tasks cost
 * N puts (and a payload item each when a payload is too large to keep inline, as for any task).
 *
 * Ids: the root's is random, or from its idempotency key; child i of a parent is childTaskId(parent, i).
 * So a flow sent again with its key meets every task its first send wrote, and writes what that send
 * did not (a put refused because the task is there is a task written before).
 */
import type * as z from 'zod';
import { forEachBounded } from '../bounded-work.js';
import { IdempotencyConflictError } from '../errors.js';
import type { flowInput, FlowNode } from '../flow-inputs.js';
import { FLOW_PARALLEL_PUTS } from '../flow-rules.js';
import { childTaskId, idempotentTaskId, requestFingerprint } from '../ids.js';
import type { Task } from '../task-model.js';
import type { StoreContext } from './context.js';
import { enqueuedWaiting, placedAsChild, placedReplacing } from './flow-transitions.js';
import { EnqueueRaceError } from './enqueue.js';
import { newTask, putNewTask, type NewTask, type ParsedEnqueue } from './new-task.js';
import { readTaskItem } from './task-reads.js';
import { expireBody } from './task-body.js';
import { isExpired, toTask, type TaskItem } from './task-item.js';

type ParsedFlow = z.output<typeof flowInput>;

/** The ids of a flow, shaped as it was sent. */
export interface FlowIds {
  id: string;
  children?: FlowIds[];
}

export interface FlowResult {
  /** The root task as written (or as the first send of its idempotency key wrote it). */
  task: Task;
  ids: FlowIds;
  /** False when the idempotency key matched an earlier send of this flow. */
  created: boolean;
  /** Every task of the flow that this call wrote (a resend writes only what the first send did not). */
  written: { id: string; type: string; availableAt: number; parent: boolean }[];
}

interface Placed {
  /**
   * The task's item, created at `createdAt` (every task of a flow has its root's), and marked with
   * its parent's `createdAt` as the parent's item has it (isChildOfThisLife).
   */
  build(createdAt: number, parentCreatedAt?: number): NewTask;
  level: number;
  /** Its parent's id, for a child. */
  parentId?: string;
  /** Whether it has children (a parent's put answers its item, whose createdAt marks them). */
  parent: boolean;
}

/** Writes a flow checked with flowInput (once, by TaskRequests.enqueueFlow, which also marks its rotated types). */
export async function writeFlow(ctx: StoreContext, input: ParsedFlow): Promise<FlowResult> {
  const now = ctx.clock.now();
  const rootId = input.idempotencyKey ? idempotentTaskId(input.owner, input.idempotencyKey) : ctx.newId();
  const flowHash = requestFingerprint(input.root);
  const placed: Placed[] = [];
  const ids = place(ctx, input, input.root, rootId, undefined, 0, now, placed);
  const root = placed[0]!.build(now);
  (root.record as TaskItem).flowHash = flowHash;

  // The key's earlier send: this flow again (a resend, answered), another (a conflict), or a record
  // past its retention that TTL has not removed yet, which this flow replaces as a new one.
  let replacing: TaskItem | undefined;
  if (input.idempotencyKey) {
    const earlier = await readTaskItem(ctx, rootId);
    if (earlier && isExpired(earlier, now)) replacing = earlier;
    else if (earlier && earlier.flowHash !== flowHash)
      throw new IdempotencyConflictError(input.idempotencyKey, toTask(earlier));
  }
  if (replacing) {
    root.placed = placedReplacing(root.placed, replacing);
    root.record.leaseToken = Math.max(root.record.leaseToken, replacing.leaseToken);
  }
  const written: FlowResult['written'] = [];
  const { item: rootWritten, put } = await putNewTask(ctx, root, { needCurrent: true });
  const rootItem = put.applied ? rootWritten : put.current;
  // Refused, and nothing there: removed (by TTL) since. The caller may send it again.
  if (!rootItem) throw new EnqueueRaceError(rootId);
  // Another flow of the key, written since the read above (sent at the same time): none of this one's
  // children is written, so none lands under the other's root.
  if (!put.applied && rootItem.flowHash !== flowHash) {
    // The payload item written for this root (keyed by its fingerprint) is named by no task, unless the
    // other root is the same task with other children: marked for TTL then, not left for its 60 days.
    if (root.payloadItem && rootItem.requestHash !== root.record.requestHash)
      await expireBody(ctx, rootId, root.payloadItem.key);
    throw new IdempotencyConflictError(input.idempotencyKey ?? rootId, toTask(rootItem));
  }
  if (put.applied) written.push(writtenOf(rootWritten));
  // Each task below is marked with its parent's life, as the parent's item has it (written now, or by
  // an earlier send): one of an earlier life of these ids is replaced; one of this life refuses the
  // put, written by an earlier send of this flow.
  const lifeOf = new Map([[rootId, rootItem.createdAt]]);
  const depth = Math.max(...placed.map((p) => p.level));
  for (let level = 1; level <= depth; level++) {
    const tasks = placed.filter((p) => p.level === level);
    await forEachBounded(tasks.length, FLOW_PARALLEL_PUTS, async (i) => {
      const task = tasks[i]!;
      const parentCreatedAt = lifeOf.get(task.parentId!)!;
      const built = task.build(rootItem.createdAt, parentCreatedAt);
      built.placed = placedAsChild(built.placed, parentCreatedAt);
      const child = await putNewTask(ctx, built, { needCurrent: task.parent });
      if (child.put.applied) written.push(writtenOf(child.item));
      if (task.parent) {
        const item = child.put.applied ? child.item : child.put.current;
        // Refused, and nothing there: removed (by TTL) since. The caller may send it again.
        if (!item) throw new EnqueueRaceError(child.item.id);
        lifeOf.set(item.id, item.createdAt);
      }
    });
  }
  return {
    task: toTask(rootItem, rootItem),
    ids,
    created: put.applied,
    written,
  };
}

const writtenOf = (item: TaskItem): FlowResult['written'][number] => ({
  id: item.id,
  type: item.type,
  availableAt: item.availableAt,
  parent: item.childCount !== undefined,
});

/** Builds the item of `node` (id `id`) and of its children below it, in `placed`; returns its ids. */
function place(
  ctx: StoreContext,
  input: { owner: string; idempotencyKey?: string | undefined },
  node: FlowNode,
  id: string,
  parent: { id: string; index: number } | undefined,
  level: number,
  now: number,
  placed: Placed[],
): FlowIds {
  const { optional, ...fields } = node.task;
  const enqueue: ParsedEnqueue = {
    ...fields,
    owner: input.owner,
    priority: fields.priority ?? 0,
    ...(level === 0 && input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}),
  };
  const children = node.children ?? [];
  const build = (createdAt: number, parentCreatedAt?: number) => {
    const built = newTask(ctx, enqueue, id, now, createdAt);
    const record = built.record as TaskItem;
    // Ids of a flow can come back (its key used again after the record expired): tokens start from the clock.
    record.leaseToken = now;
    if (parent) {
      record.parentId = parent.id;
      record.childIndex = parent.index;
      record.parentCreatedAt = parentCreatedAt!;
      if (optional) record.optional = true;
    }
    if (children.length > 0)
      built.placed = enqueuedWaiting(record, children.length, now, now + ctx.config.flowCheckMs);
    return built;
  };
  placed.push({ build, level, parent: children.length > 0, ...(parent ? { parentId: parent.id } : {}) });
  if (children.length === 0) return { id };
  return {
    id,
    children: children.map((child, index) =>
      place(ctx, input, child, childTaskId(id, index), { id, index }, level + 1, now, placed),
    ),
  };
}
