/**
 * Gauges for the dashboard and the alarms, per task type: due tasks waiting (ready index) and the due
 * time of the oldest; and in all: tasks under a lease (lease index) and delayed tasks (delay index). Recovery reads
 * them every minute.
 *
 * Bounded cost. Reading every entry cost read units in proportion to the backlog (about $100 a month
 * per million waiting tasks). Now every partition gives one head page (keys only: a query is billed by
 * the entries it reads, not by what it returns), and each group of alike partitions (a type's sixteen
 * shards; its priority lane; the sixteen delay partitions) at most one sample read further
 * (depth-sample.ts); the lease partitions are each read further (see readGroup). A gauge sends
 * 17 queries per type (5 for a type the last sweep found empty, while it still looks empty:
 * gauge-rotation.ts) and 32 for the sweep partitions, plus for each group holding more than its head
 * pages: one further page (16 for the leases), and if the sample holds more than that a tail probe, a
 * probe per level below the first (one for a shard), and two or four pages per stratum, 4 strata per
 * span (one span for a steady backlog, two after a burst due at one instant): 11 more for a steady
 * backlog of one type, 19 after such a burst, never more than about 70 per group. With DEPTH_LIMITS,
 * one type and a steady backlog that is 60 queries and 55 read units (billed) from 10,000 waiting
 * tasks to 100,000 (bench/measures/depth-gauge.ts), 49 and 24.5 when nothing waits.
 *
 * How exact (CountBasis, per type and for each total):
 * - `counted`: no partition held more than its head page (a type up to about 1,300 ready tasks, the
 *   shards filling alike), or only the sample did and it was read to its end. Exact, up to the index's
 *   eventual consistency. Zero is always counted, for what was read: a type looked at in part (its
 *   lane and a quarter of its shards, gauge-rotation.ts) that shows nothing counts as empty, though an
 *   unread shard may hold a task whose kick was lost (read within four sweeps).
 * - `sampled`: the sample was read to its end (up to 300 entries a partition, about 4,800 a type);
 *   each other full partition is counted to its last head entry and taken to hold, from there on, what
 *   the sample holds (countGroup). Tasks go to shards by a hash of their id, so the error is the spread
 *   of one hashed share: a relative standard error of about 1/sqrt(k), k the entries a partition holds
 *   past its head page (2,000 tasks of one type: about 4 %; 1.2 % off in the test, 2 % in the bench).
 * - `extrapolated`: the sample holds more. Its unread rest is read in strata, each estimated from its
 *   two ends (depth-estimate.ts stratumProfile): exact for a steady arrival rate up to sampling, which
 *   adds about 1/sqrt(entries read) to the hashed share's spread. Measured on steady backlogs of 20,000
 *   in ten runs: errors within 6 %, standard error about 3 %; within 2 % on 8,000 tasks due at one
 *   instant followed by a trickle, and on 8,000 enqueued in half a second followed by an hour's
 *   trickle (test/queue-depth.test.ts); the bench reports it at 100,000. What it cannot see: entries tied on
 *   every level of a position (for the sweep index, one due instant, or one lease expiry) are not split
 *   by any key range, so past the reads they are not counted (delayed tasks all due at the same
 *   millisecond, beyond about 900 a partition, are under-counted: a lower bound); and a rate that steps
 *   inside a stratum whose two ends both read only one side of the step is estimated at the mean of
 *   the two densities.
 *
 * The oldest due task of a type is exact for its default-priority shards (each head is its oldest).
 * Its lane mixes priorities, highest first: the oldest is taken among the lane entries read and the
 * oldest of its lowest priority (one more probe when the lane was not read to its end), so a task of
 * a middle priority deeper than that is not seen.
 */
import { readTypeControls } from './type-controls.js';
import { rotationDepth } from './rotation-depth.js';
import {
  delaySweepPartition,
  lanePartition,
  leaseSweepPartition,
  SHARD_COUNT,
  shardPartition,
} from '../table-layout.js';
import type { StoreContext } from './context.js';
import { countGroup, worseBasis, type CountBasis, type GroupCount } from './depth-estimate.js';
import {
  comparePositions,
  DELAY_INDEX,
  LEASE_INDEX,
  READY_INDEX,
  type DepthIndex,
  type Position,
} from './depth-keys.js';
import { readSlice, type Slice } from './depth-reads.js';
import {
  extrapolateRest,
  readFurther,
  type DepthLimits,
  type Extrapolated,
  type FurtherRead,
} from './depth-sample.js';

export type { CountBasis } from './depth-estimate.js';

/**
 * A head page of 100 ready entries is about 14 KB (2 read units; an empty one is billed 0.5): a type is
 * counted exactly up to about 1,300 waiting tasks. The sample's further page of 200 (about 3.5 units)
 * counts it up to 300, so a group is sampled up to about 4,800. Past that its rest is read in 4 strata
 * per span from both ends, 25 entries an end at least and 600 a span in all (about 11 units): the
 * estimate's sampling error is about 1/sqrt(entries read), so fewer would cost precision, and more
 * would not help much below 100,000 tasks, where the spread of one hashed share (the sample's own
 * count against its alike partitions') dominates.
 */
export const DEPTH_LIMITS: DepthLimits = {
  head: 100,
  deep: 200,
  stratumEnd: 25,
  strata: 4,
  spanEntries: 600,
};

export interface TypeDepth {
  /** Due tasks of the type waiting to be claimed. */
  ready: number;
  basis: CountBasis;
  /** Due time of the type's longest-waiting ready task, if any waits (see the module comment for the lane). */
  oldestDueAt: number | undefined;
}

export interface QueueDepth {
  /** Due tasks waiting, all the given types together. */
  ready: number;
  leased: number;
  /** Waiting for their due time (delays and retry backoffs), or due and not yet promoted. */
  delayed: number;
  /** Due time of the longest-waiting ready task of the given types, if any is waiting. */
  oldestDueAt: number | undefined;
  byType: Record<string, TypeDepth>;
  /** The earliest due time among delayed tasks (each delay partition's head), if any waits. */
  nextDueAt: number | undefined;
  basis: { ready: CountBasis; leased: CountBasis; delayed: CountBasis };
  /** True when every figure was counted, none estimated. */
  exact: boolean;
}

/**
 * Head pages of the sweep partitions read already (the minute's sweep reads them for its fixes too),
 * in shard order; one left undefined is read here.
 */
export interface SweepHeads {
  lease: (Slice | undefined)[];
  delay: (Slice | undefined)[];
}

/** The shards of a type to look at first (gauge-rotation.ts); undefined: read them all. */
export type FirstShards = (type: string) => readonly number[] | undefined;

export async function queueDepth(
  ctx: StoreContext,
  types: string[],
  limits: DepthLimits = DEPTH_LIMITS,
  sweepHeads?: SweepHeads,
  firstShards: FirstShards = () => undefined,
): Promise<QueueDepth> {
  const shards = Array.from({ length: SHARD_COUNT }, (_, s) => s);
  const unique = [...new Set(types)];
  // Which types have rotated tasks (marked in the type controls, or declared with fair shares): only
  // their rotation partitions are counted, so a deployment without groups reads one small Query more.
  const controls = await readTypeControls(ctx);
  const rotated = (type: string) =>
    controls.get(type)?.grouped === true || ctx.typeGrouping.fairShares.includes(type);
  const [perType, leased, delayed] = await Promise.all([
    Promise.all(unique.map((type) => typeDepth(ctx, type, limits, firstShards(type), rotated(type)))),
    readGroup(ctx, LEASE_INDEX, shards.map(leaseSweepPartition), limits, false, sweepHeads?.lease),
    readGroup(ctx, DELAY_INDEX, shards.map(delaySweepPartition), limits, true, sweepHeads?.delay),
  ]);
  const byType = Object.fromEntries(unique.map((type, i) => [type, perType[i]!]));
  const dueTimes = perType.flatMap((t) => (t.oldestDueAt === undefined ? [] : [t.oldestDueAt]));
  // A delay partition is sorted by due time: its first entry is its earliest.
  const delayHeads = delayed.reads.flatMap((r) => (r.points[0]?.[0] === undefined ? [] : [r.points[0][0]]));
  const basis = {
    ready: perType.reduce<CountBasis>((b, t) => worseBasis(b, t.basis), 'counted'),
    leased: leased.count.basis,
    delayed: delayed.count.basis,
  };
  return {
    ready: perType.reduce((sum, t) => sum + t.ready, 0),
    leased: leased.count.count,
    delayed: delayed.count.count,
    oldestDueAt: dueTimes.length > 0 ? Math.min(...dueTimes) : undefined,
    byType,
    nextDueAt: delayHeads.length > 0 ? Math.min(...delayHeads) : undefined,
    basis,
    exact: Object.values(basis).every((b) => b === 'counted'),
  };
}

async function typeDepth(
  ctx: StoreContext,
  type: string,
  limits: DepthLimits,
  first: readonly number[] | undefined,
  hasRotations: boolean,
): Promise<TypeDepth> {
  const shardPartitions = Array.from({ length: SHARD_COUNT }, (_, s) => shardPartition(type, s));
  const [looked, rotated] = await Promise.all([
    first && firstLook(ctx, type, first, limits),
    hasRotations ? rotationDepth(ctx, type, limits.deep) : { count: 0, basis: 'counted' as const },
  ]);
  if (looked && looked.empty) return { ready: rotated.count, basis: rotated.basis, oldestDueAt: undefined };
  const [shards, lane] = await Promise.all([
    readGroup(ctx, READY_INDEX, shardPartitions, limits, true, looked?.shards),
    readGroup(ctx, READY_INDEX, [lanePartition(type)], limits, true, looked && [looked.lane]),
  ]);
  // A shard holds one priority, so its first entry is its oldest due; the lane's are looked for.
  const heads = shards.reads.flatMap((r) => (r.points[0] === undefined ? [] : [r.points[0]]));
  const dueTimes = [...heads, ...(await laneOldest(ctx, type, lane))].map(dueTimeOf);
  // Rotated tasks are counted, but give no oldest due time (their keys are ordered by rotation first).
  return {
    ready: shards.count.count + lane.count.count + rotated.count,
    basis: worseBasis(worseBasis(shards.count.basis, lane.count.basis), rotated.basis),
    oldestDueAt: dueTimes.length > 0 ? Math.min(...dueTimes) : undefined,
  };
}

/**
 * A type the last sweep found empty: its lane and the given shards only. Empty: nothing more is read
 * (the other shards are read by later sweeps, gauge-rotation.ts). Otherwise the heads read here serve
 * the full read that follows, in their places.
 */
async function firstLook(
  ctx: StoreContext,
  type: string,
  first: readonly number[],
  limits: DepthLimits,
): Promise<{ empty: boolean; lane: Slice; shards: (Slice | undefined)[] }> {
  const head = (partition: string) => readSlice(ctx, READY_INDEX, partition, { limit: limits.head });
  const [lane, ...read] = await Promise.all([
    head(lanePartition(type)),
    ...first.map((s) => head(shardPartition(type, s))),
  ]);
  const shards: (Slice | undefined)[] = Array.from({ length: SHARD_COUNT }, () => undefined);
  first.forEach((s, i) => (shards[s] = read[i]));
  return { empty: [lane!, ...read].every((h) => h.positions.length === 0), lane: lane!, shards };
}

/** The level of a ready position that is its due time (readySortKey: rank, availableAt, createdAt). */
const dueTimeOf = (p: Position) => p[1] ?? 0;

/**
 * Candidates for the lane's oldest due task: every lane entry read, and when the lane was not read to
 * its end, the oldest of its lowest priority (its tail's rank): the tasks most likely to starve.
 */
async function laneOldest(ctx: StoreContext, type: string, lane: GroupRead): Promise<Position[]> {
  const read = lane.sample?.profile.points ?? lane.reads[0]?.points ?? [];
  const tail = lane.sample?.tail;
  if (tail === undefined || tail[0] === undefined) return read;
  const lowest = await readSlice(ctx, READY_INDEX, lanePartition(type), {
    limit: 1,
    range: READY_INDEX.bounds([], tail[0], tail[0]),
  });
  return [...read, ...lowest.positions];
}

interface GroupRead {
  count: GroupCount;
  /** What was read of each partition, in the order the partitions were given. */
  reads: FurtherRead[];
  sample: (Extrapolated & { partition: number }) | undefined;
}

/**
 * One group of partitions: every head page, then the sample (the full partition whose head page ends
 * earliest: the least taken out of, see countGroup) read further, and its rest extrapolated if it
 * holds more. Partitions that are not `alike` (the lease partitions: a worker
 * claims from a shard of its own until it is empty, so leases gather in the shards being claimed
 * from) are each read further, so a few deep ones are counted rather than matched to a shallow one.
 */
async function readGroup(
  ctx: StoreContext,
  index: DepthIndex,
  partitions: string[],
  limits: DepthLimits,
  alike: boolean,
  given: (Slice | undefined)[] = [],
): Promise<GroupRead> {
  const heads = await Promise.all(
    partitions.map((p, i) => given[i] ?? readSlice(ctx, index, p, { limit: limits.head })),
  );
  const first = earliestOpen(heads.map((h) => ({ points: h.positions, next: h.next })));
  const reads = await Promise.all(
    heads.map((head, i) =>
      (alike ? i === first : head.next !== undefined)
        ? readFurther(ctx, index, partitions[i]!, head, limits)
        : { points: head.positions, next: head.next },
    ),
  );
  const at = alike ? first : earliestOpen(reads);
  const sampled = at === undefined ? undefined : reads[at]!;
  const sample =
    at === undefined || sampled === undefined
      ? undefined
      : sampled.next === undefined
        ? { partition: at, profile: { points: sampled.points, segments: [] }, tail: undefined }
        : { partition: at, ...(await extrapolateRest(ctx, index, partitions[at]!, sampled.points, limits)) };
  const count = countGroup(
    reads.map((r) => ({ points: r.points, complete: r.next === undefined })),
    sample && { ...sample, complete: sampled?.next === undefined },
  );
  return { count, reads, sample };
}

/**
 * The partition not read to its end whose last entry read sorts first: the densest at its head, so
 * the one claims took least from (a claim picks at random among the first few dozen heads, so a
 * drained partition may keep an early first entry, but not an early hundredth).
 */
function earliestOpen(reads: FurtherRead[]): number | undefined {
  let at: number | undefined;
  reads.forEach((read, i) => {
    const last = read.points.at(-1);
    if (read.next === undefined || last === undefined) return;
    const best = at === undefined ? undefined : reads[at]!.points.at(-1);
    if (best === undefined || comparePositions(last, best) < 0) at = i;
  });
  return at;
}
