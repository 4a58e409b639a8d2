/**
 * The sort keys of the two sharded indexes as positions the depth gauge can measure distances on.
 * A ready sort key `rank#availableAt#createdAt#id` (readySortKey) is the position
 * [rank, availableAt, createdAt]; a sweep key `sweepAt` is [sweepAt]. Positions compare level by
 * level, which is the index's own order (the id, or the table key on the sweep index, only breaks
 * ties, and nothing can be measured on it). `bounds` turns "these first levels fixed, the next one in
 * [lo, hi]" back into a KeyCondition range, so the gauge can read one slice of a partition.
 */
import { LeaseholdError } from '../errors.js';
import { INDEX } from '../table-layout.js';

/** Numeric levels of a sort key, most significant first. */
export type Position = readonly number[];

/** A KeyCondition range on the sort key, both ends included. */
export type SortRange = readonly [from: string | number, to: string | number];

export interface DepthIndex {
  name: string;
  partition: string;
  sort: string;
  /** How many numeric levels a position of this index has. */
  levels: number;
  /**
   * How many leading levels are categories rather than instants (the ready key's priority rank): a
   * cell of such a level is a group of its own, so no density over its cells means anything.
   */
  categoryLevels: number;
  position(sortValue: unknown): Position;
  /** The sort-key range holding every entry whose position starts with `prefix` and whose next level is in [lo, hi]. */
  bounds(prefix: Position, lo: number, hi: number): SortRange;
}

/** An index entry whose sort key is not what the table layout writes: the table holds data this code did not write. */
export class MalformedIndexKeyError extends LeaseholdError {
  override name = 'MalformedIndexKeyError';
  override readonly code = 'MALFORMED_INDEX_KEY';

  constructor(index: string, value: unknown) {
    super(`an entry of the ${index} index has a sort key the depth gauge cannot read: ${String(value)}`);
  }
}

/** Level widths of readySortKey (priority rank, availableAt, createdAt): each is zero-padded to these. */
const READY_WIDTHS = [4, 13, 13] as const;
/** Sorts after every character of an id, so `<levels>#\uffff` closes a range over every id of those levels. */
const AFTER_ANY_ID = '\uffff';

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const readyPrefix = (prefix: Position) => prefix.map((v, level) => pad(v, READY_WIDTHS[level] ?? 0));

export const READY_INDEX: DepthIndex = {
  ...INDEX.ready,
  levels: READY_WIDTHS.length,
  categoryLevels: 1,
  position(sortValue) {
    const parts = String(sortValue).split('#', READY_WIDTHS.length).map(Number);
    if (parts.length < READY_WIDTHS.length || parts.some((n) => !Number.isSafeInteger(n)))
      throw new MalformedIndexKeyError(INDEX.ready.name, sortValue);
    return parts;
  },
  bounds(prefix, lo, hi) {
    const width = READY_WIDTHS[prefix.length];
    if (width === undefined) throw new RangeError(`a ready position has ${READY_WIDTHS.length} levels`);
    const from = [...readyPrefix(prefix), pad(lo, width)].join('#');
    const to = [...readyPrefix(prefix), pad(hi, width)].join('#');
    return [`${from}#`, `${to}#${AFTER_ANY_ID}`];
  },
};

/** The lease or the delay index: one level, the lease expiry or the due time. */
function timeIndex(index: typeof INDEX.lease | typeof INDEX.delay): DepthIndex {
  return {
    ...index,
    levels: 1,
    categoryLevels: 0,
    position(sortValue) {
      const at = Number(sortValue);
      if (!Number.isSafeInteger(at)) throw new MalformedIndexKeyError(index.name, sortValue);
      return [at];
    },
    bounds(prefix, lo, hi) {
      if (prefix.length > 0) throw new RangeError(`a position in ${index.name} has one level`);
      return [lo, hi];
    },
  };
}

export const LEASE_INDEX = timeIndex(INDEX.lease);
export const DELAY_INDEX = timeIndex(INDEX.delay);

/** Negative, zero or positive as `a` sorts before, with or after `b` on their first `levels` levels. */
export function comparePositions(a: Position, b: Position, levels = Math.max(a.length, b.length)): number {
  for (let level = 0; level < levels; level++) {
    const d = (a[level] ?? 0) - (b[level] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
