/**
 * GET /types: each task type with its operator controls (paused or not) and how many of its tasks
 * wait, run and are delayed, at a cost that does not grow with the queue:
 * - waiting: the type's due tasks from the queue summary recovery writes once a minute (one GetItem,
 *   the same figure GET /stats shows);
 * - running and delayed: the first SAMPLE_PER_PARTITION keys of each lease and delay partition (keys
 *   only, in parallel) and those tasks' types (BatchGetItem). When no partition holds more than was
 *   read, the counts are exact; otherwise each type's share of the sample is scaled to the summary's
 *   total and the answer says `estimated`.
 * - paused: the controls partition (one Query, consistent: an operator reads back what they set).
 */
import { delaySweepPartition, leaseSweepPartition } from '../table-layout.js';
import { requestPathDeadlineMs, type StoreContext } from '../store/context.js';
import { readQueueSummary } from '../store/queue-summary.js';
import { headTasksOfSweep } from '../store/sweep-page.js';
import { readTypeControls, type TypeControl } from '../store/type-controls.js';

/** Keys read per lease or delay partition: 16 × 6 = 96 tasks each, one BatchGetItem (at most 100 keys). */
export const SAMPLE_PER_PARTITION = 6;

export interface TypeCounts {
  waiting: number;
  running: number;
  delayed: number;
}

export interface TypeOverview extends TypeCounts {
  type: string;
  paused: boolean;
  /** When it was last paused or resumed, and by whom; absent if never. */
  changedAt?: number;
  changedBy?: string;
}

export interface TypesOverview {
  types: TypeOverview[];
  /** When the waiting counts were taken (the queue summary's time); absent before the first summary. */
  waitingAt?: number;
  /** Some count is scaled from a sample (a partition held more than was read) or waits for a summary. */
  estimated: boolean;
}

/** A sample's tally per type, scaled to `total` when the sample is not the whole (pure). */
export function scaleCounts(
  sample: readonly string[],
  complete: boolean,
  total: number | undefined,
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of sample) counts.set(type, (counts.get(type) ?? 0) + 1);
  if (complete || total === undefined || sample.length === 0 || total <= sample.length) return counts;
  for (const [type, n] of counts) counts.set(type, Math.round((n / sample.length) * total));
  return counts;
}

/** The types of the first tasks of each partition, and whether those were all of them. */
async function sampleTypes(
  ctx: StoreContext,
  partitionOf: (shard: number) => string,
): Promise<{ types: string[]; complete: boolean }> {
  const { items, complete } = await headTasksOfSweep<{ type: string }>(
    ctx,
    partitionOf,
    SAMPLE_PER_PARTITION,
  );
  return { types: items.map((item) => item.type), complete };
}

export async function readTypesOverview(ctx: StoreContext, types: readonly string[]): Promise<TypesOverview> {
  const [controls, summary, leased, delayed] = await Promise.all([
    readTypeControls(ctx, { consistent: true, deadlineMs: requestPathDeadlineMs(ctx) }),
    readQueueSummary(ctx, requestPathDeadlineMs(ctx)),
    sampleTypes(ctx, leaseSweepPartition),
    sampleTypes(ctx, delaySweepPartition),
  ]);
  const running = scaleCounts(leased.types, leased.complete, summary?.leased);
  const waitingDelayed = scaleCounts(delayed.types, delayed.complete, summary?.delayed);
  const waiting = new Map((summary?.types ?? []).map((t) => [t.type, t.ready]));
  const waitingEstimated =
    summary?.types === undefined || summary.types.some((t) => t.estimated && types.includes(t.type));
  return {
    types: types.map((type) =>
      overviewOf(type, controls.get(type), {
        waiting: waiting.get(type) ?? 0,
        running: running.get(type) ?? 0,
        delayed: waitingDelayed.get(type) ?? 0,
      }),
    ),
    ...(summary ? { waitingAt: summary.writtenAt } : {}),
    estimated: waitingEstimated || !leased.complete || !delayed.complete,
  };
}

function overviewOf(
  type: string,
  control: (Pick<TypeControl, 'paused' | 'changedBy'> & { changedAt?: number }) | undefined,
  counts: TypeCounts,
): TypeOverview {
  return {
    type,
    paused: control?.paused ?? false,
    ...(control?.changedAt === undefined ? {} : { changedAt: control.changedAt }),
    ...(control?.changedBy ? { changedBy: control.changedBy } : {}),
    ...counts,
  };
}
