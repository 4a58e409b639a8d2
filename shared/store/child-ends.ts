/**
 * A child's end counted on its parent, and the parent's readiness (flow-rules.ts). Whoever wrote the
 * child's end (the worker's outcome write, a cancel, recovery) counts it right after; a writer that died
 * between the two writes leaves it to recovery's look at the waiting parent (checkWaitingParent), which
 * reads only the children not yet counted. Counting twice is harmless: the count write requires the
 * child's number absent from the parent's set, and readiness requires the parent still waiting.
 */
import {
  CHILD_MISSING_AFTER_MS,
  childFailureText,
  decideReadiness,
  failsParent,
  isChildOfThisLife,
  missingChild,
  nextFlowCheck,
} from '../flow-rules.js';
import { childTaskId } from '../ids.js';
import { taskKey } from '../table-layout.js';
import { isTerminal, TaskStatus } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { childCounted, flowChecked, parentFailedByChild, parentReady } from './flow-transitions.js';
import { readiedEvent } from './readied-event.js';
import { readItems } from './task-reads.js';
import type { TaskItem } from './task-item.js';
import { asUpdate } from './transitions.js';
import { INDEX } from '../table-layout.js';

type Child = Pick<
  TaskItem,
  'id' | 'type' | 'status' | 'parentId' | 'childIndex' | 'optional' | 'error' | 'parentCreatedAt'
>;

/**
 * Counts a child's end on its parent (nothing for a task that is no child or has not ended), then moves
 * the parent on if that was the last count. Returns the parent as it stands, if there is one.
 */
export async function countChildEnd(ctx: StoreContext, child: Child): Promise<TaskItem | undefined> {
  if (child.parentId === undefined || child.childIndex === undefined || !isTerminal(child.status))
    return undefined;
  const failure = failsParent(child) ? childFailureText(child) : undefined;
  const written = await conditionalUpdate<TaskItem>(
    writeTargetOf(ctx, 'request'),
    taskKey(child.parentId),
    asUpdate(childCounted(child.childIndex, failure, child.parentCreatedAt)),
    { needCurrent: true, resends: 2 },
  );
  // Refused: counted before (by us, a resend whose answer was lost, or recovery), or the parent ended.
  const parent = written.applied ? written.item : written.current;
  if (!parent) return undefined;
  return (await settleReadiness(ctx, parent)) ?? parent;
}

/**
 * A parent whose children have all been counted becomes QUEUED (or FAILED by a child): the item after
 * that write, or undefined when it still waits or another writer moved it first.
 */
export async function settleReadiness(ctx: StoreContext, parent: TaskItem): Promise<TaskItem | undefined> {
  const readiness = decideReadiness(parent);
  if (readiness.action === 'none' || readiness.action === 'wait') return undefined;
  const now = ctx.clock.now();
  const t =
    readiness.action === 'queue'
      ? parentReady(parent, now)
      : parentFailedByChild(now, readiness.error, ctx.config);
  const written = await conditionalUpdate<TaskItem>(
    writeTargetOf(ctx, 'request'),
    taskKey(parent.id),
    asUpdate(t),
    { resends: 2 },
  );
  if (!written.applied) return undefined;
  const after = written.item;
  if (after.status === TaskStatus.QUEUED) {
    const readySk = after[INDEX.ready.sort as 'readySk'];
    ctx.events.emit(
      'task:readied',
      readiedEvent(after.id, readySk === undefined ? undefined : { type: after.type, readySk }),
    );
  } else {
    ctx.events.emit('task:finished', {
      taskId: after.id,
      type: after.type,
      status: 'FAILED',
      by: 'request',
      owner: after.owner,
      ...(after.error === undefined ? {} : { error: after.error }),
    });
    // A parent failed by its child is a child too, in a nested flow: its end counts on its own parent.
    await countChildEnd(ctx, after);
  }
  return after;
}

/** What recovery's look at a waiting parent did. */
export type FlowCheck = 'counted' | 'moved-on' | 'rescheduled' | 'skipped';

/**
 * Recovery's look at a waiting parent whose look time came: counts the ends of children that ended
 * uncounted (their writer died between its two writes), moves the parent on when all are counted, and
 * otherwise sets its next look (backed off: nextFlowCheck). Reads only the children not yet counted.
 */
export async function checkWaitingParent(ctx: StoreContext, parent: TaskItem): Promise<FlowCheck> {
  if (parent.status !== TaskStatus.WAITING_CHILDREN) return 'skipped';
  const now = ctx.clock.now();
  // The sweep's query reaches past now (its bound is for leases): a look comes only when it is due.
  if (parent.sweepAt !== undefined && parent.sweepAt > now) return 'skipped';
  if ((parent.childrenPending ?? 0) <= 0)
    return (await settleReadiness(ctx, parent)) ? 'moved-on' : 'skipped';
  const counted = parent.childrenEnded ?? new Set<number>();
  const uncounted: number[] = [];
  for (let i = 0; i < (parent.childCount ?? 0); i++) if (!counted.has(i)) uncounted.push(i);
  // An item of an earlier life of the parent's id is not its child: never counted, missing if never replaced.
  const children = (
    await readItems<TaskItem>(
      ctx,
      uncounted.map((i) => taskKey(childTaskId(parent.id, i))),
    )
  ).filter((child) => isChildOfThisLife(child, parent));
  const found = new Set(children.map((c) => c.id));
  const ended: Parameters<typeof countChildEnd>[1][] = children.filter((c) => isTerminal(c.status));
  // A child never written counts as failed once the parent has waited long past any send.
  if (now - (parent.waitingSince ?? parent.updatedAt) >= CHILD_MISSING_AFTER_MS)
    for (const i of uncounted) {
      const id = childTaskId(parent.id, i);
      if (!found.has(id))
        ended.push({ ...missingChild(parent.id, id, i), parentCreatedAt: parent.createdAt });
    }
  let countedNow = 0;
  let latest: TaskItem | undefined;
  for (const child of ended) {
    latest = (await countChildEnd(ctx, child)) ?? latest;
    countedNow++;
  }
  if (latest && latest.status !== TaskStatus.WAITING_CHILDREN) return 'moved-on';
  const moved = await conditionalUpdate<TaskItem>(
    writeTargetOf(ctx, 'request'),
    taskKey(parent.id),
    asUpdate(
      flowChecked(parent.sweepAt!, nextFlowCheck(now, parent.flowChecks ?? 0, ctx.config.flowCheckMs)),
    ),
  );
  if (countedNow > 0) return 'counted';
  return moved.applied ? 'rescheduled' : 'skipped';
}
