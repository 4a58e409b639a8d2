/**
 * A group's slots (group-rules.ts): `groupConcurrency` items in the group's own partition, each naming
 * the claim it admitted (`claimId`, also written on the task by that claim). A claimer takes a slot
 * before it claims a grouped task, one conditional write; nothing writes the slot when the task ends.
 * Whether the slot is still held is read from the task: a finish, a retry or a recovered lease frees
 * it. So a grouped start costs one small write more than an ungrouped one, and a dead holder's slot
 * frees when its lease is recovered.
 */
import { groupConcurrencyOf, headAlreadyRan, judgeGroupSlot, type GroupSlotSeen } from '../group-rules.js';
import { groupSlotPartition, KEY, slotSortKey, taskKey } from '../table-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { groupClaimNotLanded, groupSlotAsSeen, holdsGroupSlot } from './conditions.js';
import { uncounted } from './cost-meter.js';
import { deadline } from './dynamo.js';
import { readTaskItem } from './task-reads.js';
import { readPartitionItems } from './partition-items.js';
import { recoverTask } from './recovery.js';
import { Expression } from './update-expression.js';

type SlotItem = GroupSlotSeen & { sk: string };

/** A slot taken for one claim: the claim writes `claimId` on its task. */
export interface GroupTake {
  key: Record<string, string>;
  claimId: string;
}

/** Where slot `index` of a group lives. */
const groupSlotKey = (type: string, rotation: string, index: number) => ({
  [KEY.partition]: groupSlotPartition(type, rotation),
  [KEY.sort]: slotSortKey(index),
});

/**
 * Takes a slot of the group `rotation` of `type` for a claim of `taskId` by `holder`, or undefined when
 * every slot is held. Reads the group's slots (one consistent Query) and, for a slot with a claim, that
 * claim's task (one consistent GetItem): a group that is busy costs reads, never a write.
 */
export async function takeGroupSlot(
  ctx: StoreContext,
  type: string,
  rotation: string,
  taskId: string,
  holder: string,
): Promise<GroupTake | undefined> {
  const limit = groupConcurrencyOf(ctx.typeGrouping, type);
  const slots = new Map<number, SlotItem>();
  for (const item of await readPartitionItems<SlotItem>({
    doc: ctx.doc,
    tableName: ctx.tableName,
    partition: groupSlotPartition(type, rotation),
    consistent: true,
    deadlineMs: ctx.config.requestDeadlineMs,
  })) {
    const index = Number(item.sk.slice('SLOT#'.length));
    if (index < limit) slots.set(index, item);
  }
  // Slots no claim holds first (no read needed to judge them), then the others, each in a random order
  // so that claimers of one group rarely race for one item.
  const order = [...Array(limit).keys()].sort(
    (a, b) =>
      Number(slots.get(a)?.claimId !== undefined) - Number(slots.get(b)?.claimId !== undefined) ||
      ctx.random() - 0.5,
  );
  for (const index of order) {
    const seen = slots.get(index);
    const verdict = await slotVerdict(ctx, seen, taskId);
    // The head in hand already ran (a stale read): no slot is taken for it, nor any other of the group's.
    if (verdict === 'ran') return undefined;
    if (verdict !== 'free') continue;
    const claimId = ctx.newId();
    const taken = await conditionalUpdate(
      writeTargetOf(ctx),
      groupSlotKey(type, rotation, index),
      new Expression()
        // Two claimers that judged this slot free: only the first take applies.
        .require(groupSlotAsSeen(seen?.claimId))
        .assign({ claimId, taskId, holder, takenAt: ctx.clock.now() }),
      { resends: 1 },
    );
    if (taken.applied) return { key: groupSlotKey(type, rotation, index), claimId };
  }
  return undefined;
}

/**
 * Whether a slot may be taken now (`free`, after the write its verdict asks for: a recovery, a fence),
 * or not (`held`), or whether the task in hand, `taskId`, is the one its last claim ran, finished since
 * (`ran`: headAlreadyRan).
 */
async function slotVerdict(
  ctx: StoreContext,
  seen: SlotItem | undefined,
  taskId: string,
): Promise<'free' | 'held' | 'ran'> {
  if (seen?.claimId === undefined) return 'free';
  // The admitted task as it is now (consistent): its status, its group claim, its lease.
  const holder =
    seen.taskId === undefined
      ? undefined
      : await readTaskItem(ctx, seen.taskId, deadline(ctx.config.requestDeadlineMs));
  if (headAlreadyRan(seen, holder, taskId)) return 'ran';
  switch (judgeGroupSlot(seen, holder, ctx.clock.now(), ctx.config)) {
    case 'free':
      return 'free';
    case 'held':
      return 'held';
    case 'recoverFirst':
      // Outside the claim's cost: that task (perhaps another owner's) is not the one being claimed. The
      // slot is not taken now: the recovered task is back at the group's head, before the one in hand,
      // and the next visit takes it (the slot is free then: its claim no longer runs).
      await uncounted(() => recoverTask(ctx, seen.taskId!, holder?.leaseOwner ?? ''));
      return 'held';
    case 'voidFirst':
      return (await fenceOff(ctx, seen.taskId!, seen.claimId)) ? 'free' : 'held';
  }
}

/**
 * Fences off a claim that has not landed on its task: a late write of it is then refused (claim write's
 * groupClaimNotVoided). False when it landed meanwhile (the slot is then held by a running task).
 */
async function fenceOff(ctx: StoreContext, taskId: string, claimId: string): Promise<boolean> {
  const fenced = await conditionalUpdate(
    writeTargetOf(ctx),
    taskKey(taskId),
    new Expression().require(groupClaimNotLanded(claimId)).add('groupVoids', new Set([claimId])),
    { resends: 1 },
  );
  return fenced.applied;
}

/** Gives a slot back after its claim was lost (not applied): only while it still holds that claim. */
export async function giveBackGroupSlot(ctx: StoreContext, take: GroupTake): Promise<void> {
  await conditionalUpdate(
    writeTargetOf(ctx),
    take.key,
    new Expression()
      .require(holdsGroupSlot(take.claimId))
      .assign({ claimId: undefined, taskId: undefined, holder: undefined, takenAt: undefined }),
    { resends: 1 },
  );
}
