/**
 * Delayed tasks queued before delays got their own index wait under `DELAY#<shard>` in the lease
 * index's keys (`sweepPk`/`sweepAt`), where nothing reads delays any more. The recovery sweep moves them
 * into the delay index a page at a time (movedFromLegacyDelay: a conditional write, no read), so an
 * upgrade loses no delayed task; one due meanwhile runs at most a sweep late.
 *
 * A workload that never had such entries pays sixteen queries a sweep for the first hour of each
 * recovery container (LegacyDelayWatch): long enough to catch what a worker of the old version, still
 * running during the deploy (15 minutes at most), wrote after the first look.
 */
import { delaySweepPartition, INDEX, KEY, SHARD_COUNT } from '../table-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { sweepPage } from './sweep-page.js';
import { asUpdate, movedFromLegacyDelay } from './transitions.js';

/** How long a container keeps looking after it last found a legacy entry (or since it started). */
export const LEGACY_QUIET_MS = 60 * 60_000;

/** Entries moved per partition and sweep: 16 × 250 moves fit well inside recovery's minute. */
export const LEGACY_MOVES_PER_PARTITION = 250;

/** Whether a recovery container still looks for legacy delay entries: pure, on the caller's clock. */
export class LegacyDelayWatch {
  private startedAt: number | undefined;
  private lastFoundAt: number | undefined;

  constructor(private readonly quietMs = LEGACY_QUIET_MS) {}

  shouldLook(now: number): boolean {
    this.startedAt ??= now;
    return now - (this.lastFoundAt ?? this.startedAt) < this.quietMs;
  }

  noteLook(found: number, now: number): void {
    if (found > 0) this.lastFoundAt = now;
  }
}

export interface LegacyDelayMoves {
  /** Legacy entries read. */
  found: number;
  /** Moved into the delay index (the rest changed since the read: promoted, claimed or cancelled by an old worker). */
  moved: number;
}

/** One pass over the sixteen legacy partitions, up to LEGACY_MOVES_PER_PARTITION entries each. */
export async function moveLegacyDelays(
  ctx: StoreContext,
  perPartition = LEGACY_MOVES_PER_PARTITION,
): Promise<LegacyDelayMoves> {
  const counts = await Promise.all(
    Array.from({ length: SHARD_COUNT }, (_, shard) =>
      movePartition(ctx, delaySweepPartition(shard), perPartition),
    ),
  );
  return counts.reduce((a, b) => ({ found: a.found + b.found, moved: a.moved + b.moved }), {
    found: 0,
    moved: 0,
  });
}

async function movePartition(ctx: StoreContext, partition: string, limit: number): Promise<LegacyDelayMoves> {
  const { entries } = await sweepPage(ctx, { partition, limit, index: INDEX.lease });
  const target = writeTargetOf(ctx, 'request');
  let moved = 0;
  for (const entry of entries) {
    // A stale index entry (the task moved on) fails the condition: nothing to do for it.
    const written = await conditionalUpdate(
      target,
      { [KEY.partition]: entry[KEY.partition], [KEY.sort]: entry[KEY.sort] },
      asUpdate(movedFromLegacyDelay(partition, Number(entry[INDEX.lease.sort]))),
    );
    if (written.applied) moved++;
  }
  return { found: entries.length, moved };
}
