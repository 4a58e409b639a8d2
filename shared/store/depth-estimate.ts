/**
 * The depth gauge's estimation rules, pure (queue-depth.ts does the reads). Terms:
 * - a partition's head page: its first `headLimit` entries, read for every partition;
 * - the sample: the one full partition read further, whose profile (entries read, plus estimated
 *   unread segments) stands in for the tails of its alike partitions;
 * - a span: the unread entries of the sample between two positions that differ on one level only
 *   (`prefix` fixed, that level in [lo, hi]); a stratum: a slice of a span, read from both ends.
 */
import { comparePositions, type Position } from './depth-keys.js';

/** How a count was obtained, from best to worst. */
export type CountBasis = 'counted' | 'sampled' | 'extrapolated';
const BASIS_ORDER: readonly CountBasis[] = ['counted', 'sampled', 'extrapolated'];

/** The worse of two bases: a sum is only as good as its worst part. */
export const worseBasis = (a: CountBasis, b: CountBasis): CountBasis =>
  BASIS_ORDER.indexOf(a) >= BASIS_ORDER.indexOf(b) ? a : b;

/** Entries with position prefix `prefix` and level `level` in [lo, hi] (integers, both ends included). */
export interface Span {
  prefix: Position;
  level: number;
  lo: number;
  hi: number;
}

/** Estimated unread entries, spread evenly over the cells of a span. */
export interface Segment extends Span {
  weight: number;
}

/** What is known of one partition: the positions read (sorted), and estimates of what was not. */
export interface PartitionProfile {
  points: Position[];
  segments: Segment[];
}

export const profileTotal = (p: PartitionProfile) =>
  p.points.length + p.segments.reduce((sum, s) => sum + s.weight, 0);

/** How many entries of the profile sit at or after `from` (unread segments pro rata over their cells). */
export function countFrom(profile: PartitionProfile, from: Position): number {
  let n = 0;
  for (const point of profile.points) if (comparePositions(point, from) >= 0) n++;
  for (const s of profile.segments) n += s.weight * shareAtOrAfter(s, from);
  return n;
}

function shareAtOrAfter(span: Span, from: Position): number {
  const byPrefix = comparePositions(span.prefix, from, span.level);
  if (byPrefix !== 0) return byPrefix > 0 ? 1 : 0;
  const v = from[span.level] ?? 0;
  if (v <= span.lo) return 1;
  if (v > span.hi) return 0;
  return (span.hi - v + 1) / (span.hi - span.lo + 1);
}

/**
 * Cuts a span into at most `count` strata, narrowest first, each the previous one's width times a
 * fixed ratio, starting from `firstWidth` (the width the last page read covered): a backlog is most
 * often a burst that is being worked off, dense just past what was read and sparse towards the newest,
 * and narrow strata there keep a dense stratum's density from being spread over a wide sparse one.
 * A span no wider than `count * firstWidth` is cut evenly.
 */
export function planStrata(span: Span, firstWidth: number, count: number): Span[] {
  const width = span.hi - span.lo + 1;
  if (width <= 0) return [];
  const w0 = Math.max(1, firstWidth);
  const cuts: number[] = [];
  if (width <= count * w0) {
    for (let i = 1; i <= count; i++) cuts.push(span.lo - 1 + Math.round((width * i) / count));
  } else {
    const ratio = gallopRatio(width, w0, count);
    for (let i = 1; i <= count; i++)
      cuts.push(span.lo - 1 + Math.round((w0 * (ratio ** i - 1)) / (ratio - 1)));
  }
  cuts[cuts.length - 1] = span.hi;
  const strata: Span[] = [];
  let lo = span.lo;
  for (const cut of cuts) {
    const hi = Math.min(span.hi, cut);
    if (hi < lo) continue;
    strata.push({ ...span, lo, hi });
    lo = hi + 1;
  }
  return strata;
}

/**
 * Strata for a span over a category level (priority ranks): one per category, so that each stratum's
 * two ends measure one group, when the span holds at most `count` categories; else `count` even cuts,
 * whose estimate is coarse (it sees only the groups at each cut's ends and those between them).
 */
export function planCategoryStrata(span: Span, count: number): Span[] {
  const width = span.hi - span.lo + 1;
  if (width <= count)
    return Array.from({ length: Math.max(0, width) }, (_, i) => ({
      ...span,
      lo: span.lo + i,
      hi: span.lo + i,
    }));
  return planStrata(span, width / count, count);
}

/** The r > 1 with w0 * (1 + r + ... + r^(count-1)) = width (bisection: the sum grows with r). */
function gallopRatio(width: number, w0: number, count: number): number {
  const covered = (r: number) => (w0 * (r ** count - 1)) / (r - 1);
  let lo = 1 + 1e-9;
  let hi = Math.max(2, (width / w0) ** (1 / Math.max(1, count - 1)) + 1);
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (covered(mid) < width) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * One end of a stratum as read, from the stratum's edge inwards (the backward end newest first), and
 * whether the last read stopped at its limit. When the first read found only one cell (a tie, or a
 * burst due at one instant), it went on past that cell: a tie at the edge says nothing of how dense
 * the stratum is next to it.
 */
export interface StratumEnd {
  positions: Position[];
  ids: string[];
  full: boolean;
}

/**
 * What a stratum's two ends tell. An end that stopped short of its limit saw the whole stratum (but
 * for a tie at the other edge past its limit); two ends that share an entry saw it all between them.
 * Otherwise what lies between the innermost entry of each end is unread: at the first level on which
 * those two entries differ, the cells strictly between them are estimated at the mean of the two
 * ends' densities. That is right for a steady rate and for a rate changing in a line; for a rate that
 * steps once (a burst worked off, then a trickle) it is off by at most half the step over the unread
 * width, where one end's density alone could be off by all of it.
 */
export function stratumProfile(stratum: Span, forward: StratumEnd, backward: StratumEnd): PartitionProfile {
  const seen = new Set(forward.ids);
  const unseen = backward.positions.filter((_, i) => !seen.has(backward.ids[i]!));
  const points = [...forward.positions, ...unseen].sort((a, b) => comparePositions(a, b));
  const overlap = unseen.length < backward.positions.length;
  if (!forward.full || !backward.full || overlap) return { points, segments: [] };
  const inner = [forward.positions.at(-1), backward.positions.at(-1)] as const;
  const level = inner[0] && inner[1] ? firstDifferingLevel(inner[0], inner[1], inner[0].length) : undefined;
  if (level === undefined || level < stratum.level) return { points, segments: [] };
  const prefix = inner[0]!.slice(0, level);
  const lo = (inner[0]![level] ?? 0) + 1;
  const hi = (inner[1]![level] ?? 0) - 1;
  const densities = [forward, backward].flatMap((end) => {
    const d = edgeDensity(end.positions, prefix, level);
    return d === undefined ? [] : [d];
  });
  if (hi < lo || densities.length === 0) return { points, segments: [] };
  const density = densities.reduce((a, b) => a + b, 0) / densities.length;
  return { points, segments: [{ prefix, level, lo, hi, weight: density * (hi - lo + 1) }] };
}

/**
 * Entries per cell of `level` that an end found among its entries in the group `prefix`, leaving out
 * the cell at the stratum's edge (a tie there is a point, not a density); undefined when nothing is
 * left. Sparser than one per cell, the mean spacing between entries ((n - 1) gaps over their span);
 * denser, entries per cell spanned (the end cells are read in part, so spacing would overstate it).
 */
function edgeDensity(fromEdge: Position[], prefix: Position, level: number): number | undefined {
  const inGroup = fromEdge.filter((p) => comparePositions(p, prefix, prefix.length) === 0);
  const edgeCell = inGroup[0]?.[level];
  const rest = inGroup.filter((p) => p[level] !== edgeCell);
  const first = rest[0]?.[level];
  const last = rest.at(-1)?.[level];
  if (first === undefined || last === undefined) return undefined;
  const span = Math.abs(last - first);
  const spacing = span === 0 ? Infinity : (rest.length - 1) / span;
  return spacing <= 1 ? spacing : rest.length / (span + 1);
}

/**
 * The spans between the last position read and the partition's last one, in index order: for each
 * level below the first on which they differ, the rest of the group the last read entry belongs to
 * (up to that group's end, `groupEnds[level]`, read by a probe), then the values of the differing
 * level up to the tail. Entries tied with the last read one on every level are not in any span (no
 * key range can split a tie): the estimate leaves them out, so it is a lower bound when a tie is large.
 */
export function remainderSpans(
  last: Position,
  tail: Position,
  groupEnds: ReadonlyMap<number, Position>,
  levels: number,
): Span[] {
  const differing = firstDifferingLevel(last, tail, levels);
  if (differing === undefined || comparePositions(tail, last) < 0) return [];
  const spans: Span[] = [];
  for (let level = levels - 1; level > differing; level--) {
    const end = groupEnds.get(level);
    const lo = (last[level] ?? 0) + 1;
    if (end !== undefined && (end[level] ?? 0) >= lo)
      spans.push({ prefix: last.slice(0, level), level, lo, hi: end[level] ?? 0 });
  }
  spans.push({
    prefix: last.slice(0, differing),
    level: differing,
    lo: (last[differing] ?? 0) + 1,
    hi: tail[differing] ?? 0,
  });
  return spans.filter((s) => s.hi >= s.lo);
}

/** The first level on which two positions differ; undefined when they are tied on every level. */
export function firstDifferingLevel(a: Position, b: Position, levels: number): number | undefined {
  for (let level = 0; level < levels; level++) if ((a[level] ?? 0) !== (b[level] ?? 0)) return level;
  return undefined;
}

/**
 * The level width the last `entries` read positions of a group cover (at least 1): how wide a
 * slice holding about that many entries is, just past what was read.
 */
export function recentWidth(points: Position[], prefix: Position, level: number, entries: number): number {
  const inGroup = points.filter((p) => comparePositions(p, prefix, prefix.length) === 0);
  const recent = inGroup.slice(-entries);
  const first = recent[0];
  const last = recent.at(-1);
  if (first === undefined || last === undefined) return 1;
  return (last[level] ?? 0) - (first[level] ?? 0) + 1;
}

export interface GroupCount {
  count: number;
  basis: CountBasis;
}

/** What was read of one partition of a group: its first entries, and whether that was all of it. */
export interface PartitionRead {
  points: Position[];
  complete: boolean;
}

/**
 * The entries in a group of partitions (a type's sixteen shards, the sixteen lease or delay
 * partitions), from what was read of each and the profile of one partition not read to its end, the
 * sample.
 *
 * A partition read to its end was counted. Any other is counted up to the last entry read, and from
 * there on is taken to hold what the sample holds from that position on. Tasks are spread over the
 * partitions by a hash of their id, so past the entries taken out the partitions hold alike. Claims
 * and promotions take from the first hundred or so entries (a claim picks at random among the first
 * few dozen heads), which a head page of 100 covers; the sample is the partition whose head page
 * ends earliest, so little was taken out of it past any other's last entry read. Matching positions
 * rather than scaling counts keeps a partition that workers drained further than the others from
 * being counted as deep as the sample.
 */
export function countGroup(
  reads: PartitionRead[],
  sample: { partition: number; profile: PartitionProfile; complete: boolean } | undefined,
): GroupCount {
  let count = 0;
  let basis: CountBasis = 'counted';
  reads.forEach((read, partition) => {
    const last = read.points.at(-1);
    if (read.complete || last === undefined) count += read.points.length;
    else if (sample === undefined) {
      count += read.points.length;
      basis = worseBasis(basis, 'extrapolated');
    } else if (partition === sample.partition) {
      count += profileTotal(sample.profile);
      if (!sample.complete) basis = worseBasis(basis, 'extrapolated');
    } else {
      const before = read.points.filter((p) => comparePositions(p, last) < 0).length;
      count += Math.max(read.points.length, before + countFrom(sample.profile, last));
      basis = worseBasis(basis, sample.complete ? 'sampled' : 'extrapolated');
    }
  });
  return { count: Math.round(count), basis };
}
