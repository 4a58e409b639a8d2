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
import { recordingCost } from './recorded-cost.js';
import { sweepPage } from './sweep-page.js';
import { asUpdate, movedFromLegacyDelay } from './transitions.js';

/** How long a container keeps looking after it last found a legacy entry (or since it started). */
export const LEGACY_QUIET_MS = 60 * 60_000;

/**
 * Per partition and sweep: at most 250 moves (16 × 250 fit well inside recovery's minute), read in
 * pages of 100, and at most 1,000 entries read (entries refused, e.g. shown by a lagging index after
 * the task moved on, are paged past, so they cannot hide the tasks behind them).
 */
export const LEGACY_PASS = { moves: 250, page: 100, reads: 1_000 };

/** Whether a recovery container still looks for legacy delay entries: pure, on the caller's clock. */
export class LegacyDelayWatch {
  private startedAt: number | undefined;
  private lastFoundAt: number | undefined;

  constructor(private readonly quietMs = LEGACY_QUIET_MS) {}

  shouldLook(now: number): boolean {
    this.startedAt ??= now;
    return now - (this.lastFoundAt ?? this.startedAt) < this.quietMs;
  }

  /** After a pass: only a move counts as finding one (an entry refused each time must not keep it looking). */
  noteLook(moved: number, now: number): void {
    if (moved > 0) this.lastFoundAt = now;
  }
}

export interface LegacyDelayMoves {
  /** Legacy entries read. */
  found: number;
  /** Moved into the delay index (the rest changed since the read: promoted, claimed or cancelled by an old worker). */
  moved: number;
}

/** One pass over the sixteen legacy partitions, within LEGACY_PASS in each. */
export async function moveLegacyDelays(
  ctx: StoreContext,
  pass: typeof LEGACY_PASS = LEGACY_PASS,
): Promise<LegacyDelayMoves> {
  const counts = await Promise.all(
    Array.from({ length: SHARD_COUNT }, (_, shard) => movePartition(ctx, delaySweepPartition(shard), pass)),
  );
  return counts.reduce((a, b) => ({ found: a.found + b.found, moved: a.moved + b.moved }), {
    found: 0,
    moved: 0,
  });
}

async function movePartition(
  ctx: StoreContext,
  partition: string,
  pass: typeof LEGACY_PASS,
): Promise<LegacyDelayMoves> {
  const target = writeTargetOf(ctx, 'request');
  let found = 0;
  let moved = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const limit = Math.min(pass.page, pass.moves - moved, pass.reads - found);
    const page = await sweepPage(ctx, { partition, limit, index: INDEX.lease, startKey });
    for (const entry of page.entries) {
      const at = Number(entry[INDEX.lease.sort]);
      const written = await conditionalUpdate(
        target,
        { [KEY.partition]: entry[KEY.partition], [KEY.sort]: entry[KEY.sort] },
        // Priced as a promotion is, from the index keys it moves (one table and two index write units).
        asUpdate(
          recordingCost(
            movedFromLegacyDelay(partition, at),
            { [INDEX.lease.partition]: partition, [INDEX.lease.sort]: at },
            undefined,
            false,
          ),
        ),
      );
      if (written.applied) moved++;
    }
    found += page.entries.length;
    startKey = page.next;
  } while (startKey && moved < pass.moves && found < pass.reads);
  return { found, moved };
}
