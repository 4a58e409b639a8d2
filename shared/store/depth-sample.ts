/**
 * Reads a partition past its head page, in a bounded number of requests whatever it holds: one page
 * of `deep` entries (readFurther); if entries still follow, the sample's rest (extrapolateRest): one
 * probe for its last entry, one per level for the end of the group the last read entry is in (a ready
 * shard: the rest of its due time's burst), and `strata` strata per span between the last read entry
 * and the tail, each read from both ends (depth-estimate.ts says what each read tells).
 */
import type { StoreContext } from './context.js';
import { comparePositions, type DepthIndex, type Position } from './depth-keys.js';
import {
  firstDifferingLevel,
  planCategoryStrata,
  planStrata,
  recentWidth,
  remainderSpans,
  stratumProfile,
  type PartitionProfile,
  type Span,
  type StratumEnd,
} from './depth-estimate.js';
import { readSlice, type Slice } from './depth-reads.js';

export interface DepthLimits {
  /** Entries of every partition's head page: a partition holding fewer is counted exactly. */
  head: number;
  /** Entries the sample is read further in one request: a sample holding fewer is counted exactly. */
  deep: number;
  /** Entries of each of a stratum's two pages (its first ones, its last ones), at least. */
  stratumEnd: number;
  /** Entries the stratum pages of one span read in all, shared out by the strata's widths (endLimit). */
  spanEntries: number;
  /** Strata per span of the sample's unread rest. */
  strata: number;
}

/** A partition read past its head page: every position read, and where the reads stopped if entries follow. */
export interface FurtherRead {
  points: Position[];
  next: Record<string, unknown> | undefined;
}

/** One page of `deep` entries after a full head page (a head page that was not full is returned as it is). */
export async function readFurther(
  ctx: StoreContext,
  index: DepthIndex,
  partition: string,
  head: Slice,
  limits: DepthLimits,
): Promise<FurtherRead> {
  if (head.next === undefined) return { points: head.positions, next: undefined };
  const deep = await readSlice(ctx, index, partition, { limit: limits.deep, startKey: head.next });
  return { points: [...head.positions, ...deep.positions], next: deep.next };
}

export interface Extrapolated {
  /** What was read and what is estimated of the rest. */
  profile: PartitionProfile;
  /** The partition's last position (undefined if the partition emptied meanwhile). */
  tail: Position | undefined;
}

/** The unread rest of a partition after `points` (a FurtherRead that stopped at its limit), estimated. */
export async function extrapolateRest(
  ctx: StoreContext,
  index: DepthIndex,
  partition: string,
  points: Position[],
  limits: DepthLimits,
): Promise<Extrapolated> {
  const last = points.at(-1);
  const [tail] = (await readSlice(ctx, index, partition, { limit: 1, newestFirst: true })).positions;
  if (tail === undefined || last === undefined) return { profile: { points, segments: [] }, tail };

  const groupEnds = await probeGroupEnds(ctx, index, partition, last, tail);
  const spans = remainderSpans(last, tail, groupEnds, index.levels);
  const strata = spans.flatMap((span) => {
    const cuts =
      span.level < index.categoryLevels
        ? planCategoryStrata(span, 2 * limits.strata)
        : planStrata(
            span,
            recentWidth(points, span.prefix, span.level, 2 * limits.stratumEnd),
            limits.strata,
          );
    return cuts.map((stratum) => ({ stratum, limit: endLimit(stratum, span, limits) }));
  });
  const parts = await Promise.all(
    strata.map(async ({ stratum, limit }) => {
      const [forward, backward] = await Promise.all([
        readStratumEnd(ctx, index, partition, stratum, false, limit),
        readStratumEnd(ctx, index, partition, stratum, true, limit),
      ]);
      return stratumProfile(stratum, forward, backward);
    }),
  );
  return {
    profile: {
      points: [...points, ...parts.flatMap((p) => p.points)].sort((a, b) => comparePositions(a, b)),
      segments: parts.flatMap((p) => p.segments),
    },
    tail,
  };
}

/**
 * Entries each end of a stratum reads: `spanEntries` shared out by width, at least `stratumEnd`. The
 * estimate of a stratum is its width times a density measured on what its ends read (relative error
 * about 1/sqrt(entries)), so the widest strata, which carry most of the estimate, read the most.
 */
function endLimit(stratum: Span, span: Span, limits: DepthLimits): number {
  const share = (stratum.hi - stratum.lo + 1) / (span.hi - span.lo + 1);
  return Math.max(limits.stratumEnd, Math.round((limits.spanEntries * share) / 2));
}

/**
 * One end of a stratum (its first entries, or newest first its last ones). A full read that found a
 * single cell of the stratum's level (a tie, or a burst due at one instant) goes on once past that
 * cell, towards the other end: see StratumEnd.
 */
async function readStratumEnd(
  ctx: StoreContext,
  index: DepthIndex,
  partition: string,
  stratum: Span,
  newestFirst: boolean,
  limit: number,
): Promise<StratumEnd> {
  const read = (lo: number, hi: number) =>
    readSlice(ctx, index, partition, { limit, range: index.bounds(stratum.prefix, lo, hi), newestFirst });
  const first = await read(stratum.lo, stratum.hi);
  const cells = new Set(first.positions.map((p) => p[stratum.level]));
  const cell = first.positions[0]?.[stratum.level];
  const [lo, hi] = newestFirst ? [stratum.lo, (cell ?? 0) - 1] : [(cell ?? 0) + 1, stratum.hi];
  if (first.next === undefined || cells.size !== 1 || cell === undefined || hi < lo)
    return { positions: first.positions, ids: first.ids, full: first.next !== undefined };
  const past = await read(lo, hi);
  return {
    positions: [...first.positions, ...past.positions],
    ids: [...first.ids, ...past.ids],
    full: past.next !== undefined,
  };
}

/**
 * For each level below the first on which `last` and `tail` differ, the last entry of the group
 * sharing `last`'s levels above it: where the rest of that group ends (for a ready shard, the last
 * task of the due time `last` has, ordered by creation).
 */
async function probeGroupEnds(
  ctx: StoreContext,
  index: DepthIndex,
  partition: string,
  last: Position,
  tail: Position,
): Promise<Map<number, Position>> {
  const differing = firstDifferingLevel(last, tail, index.levels);
  const ends = new Map<number, Position>();
  if (differing === undefined) return ends;
  const levels = Array.from({ length: index.levels - differing - 1 }, (_, i) => differing + 1 + i);
  await Promise.all(
    levels.map(async (level) => {
      const group = last[level - 1] ?? 0;
      const [end] = (
        await readSlice(ctx, index, partition, {
          limit: 1,
          newestFirst: true,
          range: index.bounds(last.slice(0, level - 1), group, group),
        })
      ).positions;
      if (end !== undefined) ends.set(level, end);
    }),
  );
  return ends;
}
