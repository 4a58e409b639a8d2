/**
 * The recovery Lambda's minute: one read of each sweep partition's head serves both the fixes
 * (recovery.ts) and the gauges (queue-depth.ts). Each read them apart before: the same 32 partitions
 * twice a minute, about a fifth of the sweep's queries with five task types.
 */
import { delaySweepPartition, leaseSweepPartition, SHARD_COUNT } from '../table-layout.js';
import type { StoreContext } from './context.js';
import type { Slice } from './depth-reads.js';
import { DEPTH_LIMITS, queueDepth, type QueueDepth } from './queue-depth.js';
import type { DepthLimits } from './depth-sample.js';
import { recoverExpired, type RecoveryReport, type SweepHeadPage } from './recovery.js';
import { entryAt, sweepPage } from './sweep-page.js';
import type { GaugeRotation } from './gauge-rotation.js';

export async function sweepAndMeasure(
  ctx: StoreContext,
  types: string[],
  rotation?: GaugeRotation,
  limits: DepthLimits = DEPTH_LIMITS,
): Promise<{ report: RecoveryReport; depth: QueueDepth }> {
  const shards = Array.from({ length: SHARD_COUNT }, (_, s) => s);
  const partitions = [...shards.map(leaseSweepPartition), ...shards.map(delaySweepPartition)];
  // A head that failed (throttling, a fault) is read again by whichever needs it, as each did alone.
  const read = await Promise.allSettled(
    partitions.map((partition) => sweepPage(ctx, { partition, limit: limits.head })),
  );
  const heads = read.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
  const left = new Set<string>();
  const report = await recoverExpired(ctx, {
    heads: new Map(partitions.flatMap((p, i) => (heads[i] ? [[p, heads[i]] as const] : []))),
    left,
  });
  // What the sweep moved out of its partition is gone from it (a requeued task is counted where it went,
  // in its ready partition, which the gauge reads after the fixes).
  const slices = heads.map((head, i) => head && sliceOf(head, partitions[i]!, left, limits.head));
  const depth = await queueDepth(
    ctx,
    types,
    limits,
    { lease: slices.slice(0, SHARD_COUNT), delay: slices.slice(SHARD_COUNT) },
    (type) => rotation?.firstShards(type),
  );
  rotation?.noteSweep(depth.byType);
  return { report, depth };
}

/** A head page as the depth gauge reads one, less the entries the sweep moved out. */
function sliceOf(head: SweepHeadPage, partition: string, left: ReadonlySet<string>, limit: number): Slice {
  const staying = head.entries.filter((e) => !left.has(e.pk));
  return {
    positions: staying.map((e) => [entryAt(e, partition)]),
    ids: staying.map((e) => e.pk),
    // As readSlice: more may follow only a full page.
    next: head.entries.length >= limit ? head.next : undefined,
  };
}
