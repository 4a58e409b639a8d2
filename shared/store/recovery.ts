/**
 * Recovery: find leases that ran out (sweep index, sharded, keys only), read each task back
 * consistently, decide with the pure rules, and fix it with a write conditioned on exactly the lease
 * it observed, so two sweeps racing over the same tasks fix each one once. The same sweep promotes
 * delayed tasks that became due into the ready index.
 */
import { recordingCost } from './recorded-cost.js';
import { decideRecovery, sweepQueryBound } from '../lease-rules.js';
import {
  delaySweepPartition,
  INDEX,
  KEY,
  leaseSweepPartition,
  SHARD_COUNT,
  shardForId,
  taskIdFromPk,
  taskKey,
} from '../table-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { readItems, readTaskItem } from './task-reads.js';
import { entryAt, sweepPage, type SweepEntry } from './sweep-page.js';
import { parseInput, taskRefInput } from '../task-inputs.js';
import type { TaskItem } from './task-item.js';
import {
  asUpdate,
  DUE_READY,
  promoted,
  recoveredCancel,
  recoveredFail,
  recoveredRequeue,
  type Transition,
} from './transitions.js';
import { readiedEvent, type ReadyKey } from './readied-event.js';
import { checkWaitingParent, countChildEnd } from './child-ends.js';
import { TaskStatus } from '../task-model.js';

export interface RecoveryReport {
  requeued: number;
  failed: number;
  cancelled: number;
  promoted: number;
  /** Candidates that turned out live, or that another sweep or their holder fixed first. */
  skipped: number;
  /** Parents waiting for their children that this sweep looked at (and counted or moved on: child-ends.ts). */
  flowChecks: number;
  /** Query pages read (each at most one batch). */
  batches: number;
  /** True when the item budget ran out before every shard was swept. */
  truncated: boolean;
  /** Requests that failed (after the SDK's retries); what they were about is left for the next sweep. */
  errors: string[];
  /** Each task this sweep fixed, with the lease it found expired (for histories and audits). */
  fixes: { taskId: string; token: number; leaseUntil: number; action: 'requeued' | 'failed' | 'cancelled' }[];
}

type Fix = 'requeued' | 'failed' | 'cancelled' | 'skipped';

/** A partition's first entries, read already (the minute's sweep reads each head once: minute-sweep.ts). */
export interface SweepHeadPage {
  entries: SweepEntry[];
  next: Record<string, unknown> | undefined;
}

export interface SweepReuse {
  /** By partition: what is due in them is fixed without reading them again. */
  heads?: ReadonlyMap<string, SweepHeadPage>;
  /** Gets the table key (`pk`) of each task whose entry this sweep moved out of its partition. */
  left?: Set<string>;
}

/**
 * Each fix is emitted ('recover:fix') as soon as its write applied: histories time recovery by it, not
 * by the sweep's end.
 */
export async function recoverExpired(ctx: StoreContext, reuse: SweepReuse = {}): Promise<RecoveryReport> {
  const report: RecoveryReport = {
    requeued: 0,
    failed: 0,
    cancelled: 0,
    promoted: 0,
    flowChecks: 0,
    skipped: 0,
    batches: 0,
    truncated: false,
    errors: [],
    fixes: [],
  };
  const { recoveryBatchSize: batchSize, recoveryMaxBatches: maxBatches } = ctx.config;
  const budget = batchSize * maxBatches;
  const now = ctx.clock.now();
  // Expired leases first: a dead holder's task waits on them; a due delayed task is only late.
  const work: SweepWork[] = [];
  for (let shard = 0; shard < SHARD_COUNT; shard++)
    work.push({
      partition: leaseSweepPartition(shard),
      bound: sweepQueryBound(now, ctx.config),
      kind: 'lease',
    });
  for (let shard = 0; shard < SHARD_COUNT; shard++)
    work.push({ partition: delaySweepPartition(shard), bound: now, kind: 'delay' });
  // Partitions are swept sixteen at a time (one round per kind); each takes its share of the item budget as it goes.
  const budgetBox = { left: budget };
  const unreadHeads = new Map(reuse.heads ?? []);
  const starved: typeof work = [];
  const sweep = async (w: (typeof work)[number]) => {
    try {
      // A head serves a partition's first page only: a starved partition goes on from where it stopped.
      const head = unreadHeads.get(w.partition);
      unreadHeads.delete(w.partition);
      const swept = await sweepPartition(ctx, report, w, now, budgetBox, head, reuse.left);
      if (swept !== 'done') starved.push({ ...w, ...swept });
    } catch (error) {
      // A failing partition (throttling, a fault) does not stop the sweep of the others; the next sweep retries it.
      report.errors.push(describe(error));
    }
  };
  for (let i = 0; i < work.length; i += PARALLEL_PARTITIONS)
    await Promise.all(work.slice(i, i + PARALLEL_PARTITIONS).map(sweep));
  // Partitions that found the budget taken by their neighbours get what those gave back, one at a time.
  while (starved.length > 0 && budgetBox.left > 0) await sweep(starved.shift()!);
  if (starved.length > 0) report.truncated = true;
  return report;
}

const PARALLEL_PARTITIONS = SHARD_COUNT;

interface SweepWork {
  partition: string;
  bound: number;
  kind: 'lease' | 'delay';
  /** Where a starved partition goes on (the entry after which it stopped). */
  startKey?: Record<string, unknown> | undefined;
}

/**
 * The first page from a head read already: its due entries (sorted, so a prefix) up to `take`, and
 * where to go on: after the last one taken when the budget cut it, at the head's end when every entry
 * of a full head was due, nowhere when an entry not yet due was read.
 */
export function pageFromHead(
  head: SweepHeadPage,
  partition: string,
  bound: number,
  take: number,
): { entries: SweepEntry[]; next: Record<string, unknown> | undefined } {
  const due = head.entries.filter((e) => entryAt(e, partition) <= bound);
  const entries = due.slice(0, take);
  // A keys-only index entry is exactly its keys: the last one taken is where a query goes on.
  if (entries.length < due.length) return { entries, next: entries.at(-1) };
  return { entries, next: due.length === head.entries.length ? head.next : undefined };
}

/** Sweeps one partition, taking what it reads from the shared item budget: 'done', or where it stopped. */
async function sweepPartition(
  ctx: StoreContext,
  report: RecoveryReport,
  work: SweepWork,
  now: number,
  budget: { left: number },
  head: SweepHeadPage | undefined,
  left: Set<string> | undefined,
): Promise<'done' | { startKey: Record<string, unknown> | undefined }> {
  const { partition, bound, kind } = work;
  const { recoveryBatchSize: batchSize } = ctx.config;
  let startKey = work.startKey;
  let fromHead = head;
  do {
    if (budget.left <= 0) return { startKey };
    // Reserve before reading (other partitions read at the same time), give back what was not used.
    const take = Math.min(batchSize, budget.left);
    budget.left -= take;
    const page = fromHead
      ? pageFromHead(fromHead, partition, bound, take)
      : await sweepPage(ctx, { partition, bound, limit: take, startKey });
    fromHead = undefined;
    if (page.entries.length > 0) report.batches++;
    budget.left += take - page.entries.length;
    startKey = page.next;
    if (kind === 'delay') {
      const results = await Promise.allSettled(page.entries.map((k) => promote(ctx, k.pk, partition, now)));
      results.forEach((r, i) => {
        if (r.status === 'rejected') report.errors.push(describe(r.reason));
        else if (r.value) {
          report.promoted++;
          left?.add(page.entries[i]!.pk);
        } else report.skipped++;
      });
    } else if (page.entries.length > 0) {
      const items = await readItems<TaskItem>(
        ctx,
        page.entries.map((k) => taskKey(taskIdFromPk(k.pk))),
      );
      // Settled one by one, so a fix that applied is reported even when another one failed.
      const fixes = await Promise.allSettled(
        items.map(async (item) => {
          // A parent waiting for its children, due for recovery's look (child-ends.ts).
          if (item.status === TaskStatus.WAITING_CHILDREN) {
            const check = await checkWaitingParent(ctx, item);
            if (check === 'skipped') report.skipped++;
            else report.flowChecks++;
            return;
          }
          const action = await fixExpired(ctx, item, now);
          report[action]++;
          if (action === 'skipped') return;
          left?.add(taskKey(item.id).pk);
          report.fixes.push({
            taskId: item.id,
            token: item.leaseToken,
            leaseUntil: item.leaseUntil!,
            action,
          });
        }),
      );
      for (const fix of fixes) if (fix.status === 'rejected') report.errors.push(describe(fix.reason));
    }
  } while (startKey);
  return 'done';
}

const describe = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

/**
 * Recovers one task by id if its lease ran out (used when a claimer takes over the expired slot of a
 * dead holder): 'lease-valid' when that holder still holds the task, 'fixed' when this call fixed it.
 */
export async function recoverTask(
  ctx: StoreContext,
  taskId: string,
  slotHolder: string,
): Promise<'lease-valid' | 'fixed' | 'done'> {
  const item = await readTaskItem(ctx, taskId);
  if (!item) return 'done';
  const now = ctx.clock.now();
  const decision = decideRecovery(item, now, ctx.config);
  if (decision.action === 'skip')
    return decision.reason === 'lease-valid' && item.leaseOwner === slotHolder ? 'lease-valid' : 'done';
  return (await fixExpired(ctx, item, now)) === 'skipped' ? 'done' : 'fixed';
}

async function fixExpired(ctx: StoreContext, item: TaskItem, now: number): Promise<Fix> {
  const decision = decideRecovery(item, now, ctx.config);
  if (decision.action === 'skip') return 'skipped';
  // Each fix is conditioned on the lease exactly as it was read back.
  const [t, fix]: [Transition, Fix] =
    decision.action === 'cancel'
      ? [recoveredCancel(item, now, ctx.config), 'cancelled']
      : decision.action === 'requeue'
        ? [recoveredRequeue(item, now), 'requeued']
        : [recoveredFail(item, now, decision.error, ctx.config), 'failed'];
  ctx.events.emit('recover:intent', { taskId: item.id });
  // A fix whose answer was lost, then refused on the resend, is still reported as the fix it was.
  // The fix records its own cost on the task (the item it read back prices it: recorded-cost.ts).
  const recorded = recordingCost(t, item, undefined);
  const written = await conditionalUpdate<TaskItem>(
    writeTargetOf(ctx, 'request'),
    taskKey(item.id),
    asUpdate(recorded),
  );
  if (!written.applied) return 'skipped';
  ctx.events.emit('recover:fix', {
    taskId: item.id,
    token: item.leaseToken,
    leaseUntil: item.leaseUntil!,
    action: fix,
  });
  // Requeued at its due time: a kick after the sweep hands it over by key (functions/recovery.ts).
  if (fix === 'requeued')
    ctx.events.emit('task:readied', readiedEvent(item.id, readyKeyOf({ type: item.type, ...t.assign })));
  // A requeue is the dead holder's attempt failing back into the queue: retried, as a worker's would be.
  ctx.events.emit('task:finished', {
    taskId: item.id,
    type: item.type,
    status: fix === 'failed' ? 'FAILED' : fix === 'cancelled' ? 'CANCELLED' : 'RETRYING',
    by: 'recovery',
    owner: item.owner,
    ...(fix === 'failed' && decision.action === 'fail' ? { error: decision.error } : {}),
  });
  // A child that ended here counts on its parent (best effort: the parent's own look makes a missed count).
  if (fix !== 'requeued' && item.parentId !== undefined)
    await countChildEnd(ctx, written.item).catch(() => undefined);
  return fix;
}

/**
 * Promotes one delayed task by id if it is due (the timekeeper, and the worker that scheduled a retry
 * when the backoff ends): the task's type and ready key when it applied, else undefined.
 */
export async function promoteTask(
  ctx: StoreContext,
  rawInput: { id: string },
): Promise<ReadyKey | undefined> {
  const { id } = parseInput(taskRefInput, 'promote', rawInput);
  const written = await promoteWrite(
    ctx,
    taskKey(id).pk,
    delaySweepPartition(shardForId(id)),
    ctx.clock.now(),
  );
  if (!written.applied) return undefined;
  return readyKeyOf(written.item);
}

/** What a delayed task has in the indexes, as far as pricing its promotion goes (its entry moves from the sweep to the ready index). */
const DELAYED_INDEX_KEYS = {
  [INDEX.delay.partition]: 'DELAY',
  [INDEX.delay.sort]: 0,
  [DUE_READY.partition]: 'ready',
  [DUE_READY.sort]: 'head',
};

/** Moves a due delayed task into the ready index, copying its precomputed ready keys inside DynamoDB (no read). */
async function promote(ctx: StoreContext, pk: string, partition: string, now: number): Promise<boolean> {
  const written = await promoteWrite(ctx, pk, partition, now);
  // A kick after the sweep hands it over by this key (functions/recovery.ts): the index may not show it yet.
  if (written.applied)
    ctx.events.emit('task:readied', readiedEvent(taskIdFromPk(pk), readyKeyOf(written.item)));
  return written.applied;
}

/** The type and ready key a write left on a task (its ALL_NEW image or its assigned fields). */
function readyKeyOf(item: Record<string, unknown> | undefined): ReadyKey | undefined {
  const readySk = item?.[INDEX.ready.sort];
  return typeof readySk === 'string' && typeof item?.type === 'string'
    ? { type: item.type, readySk }
    : undefined;
}

function promoteWrite(ctx: StoreContext, pk: string, partition: string, now: number) {
  return conditionalUpdate<Record<string, unknown>>(
    writeTargetOf(ctx, 'request'),
    { [KEY.partition]: pk, [KEY.sort]: 'TASK' },
    // Without a read, priced from the index keys it moves (an item under 1 KB: 1 unit).
    asUpdate(recordingCost(promoted(partition, now), DELAYED_INDEX_KEYS, undefined, false)),
  );
}
