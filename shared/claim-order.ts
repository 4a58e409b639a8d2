/**
 * Pure rules of the claim order across partitions and types (priority DESC, then due time, then age;
 * docs/architecture.md, 'Claim order'). The ready sort key encodes all three, so comparing keys
 * compares claim order.
 */
import type { LeaseholdConfig } from './config.js';
import { DEFAULT_PRIORITY, priorityOfReadySortKey } from './table-layout.js';

/** What the order needs of a ready head. */
export interface Head {
  readySk: string;
}

/** Claim order: the head that should start first sorts first, whatever its type or partition. */
export const byClaimOrder = (a: Head, b: Head): number =>
  a.readySk < b.readySk ? -1 : a.readySk > b.readySk ? 1 : 0;

export const isAboveDefault = (h: Head): boolean => priorityOfReadySortKey(h.readySk) > DEFAULT_PRIORITY;

/**
 * One page of one type's lane, and whether the lane holds more after it. Heads of several lanes can
 * only be taken in merged order up to the first unread head of any lane: past that point an unread
 * head of another lane may come first.
 */
export interface LanePage<H extends Head> {
  heads: H[];
  /** The last key this page read; undefined once the lane was read to its end. */
  frontier: string | undefined;
}

/** The heads, across lanes, that may be taken now (in claim order), and the lane to read further if none may. */
export function takeableAcrossLanes<H extends Head>(
  pages: Map<string, LanePage<H>>,
): { takeable: H[]; readMore: string | undefined } {
  let bound: string | undefined;
  let boundLane: string | undefined;
  for (const [lane, page] of pages) {
    if (page.frontier !== undefined && (bound === undefined || page.frontier < bound)) {
      bound = page.frontier;
      boundLane = lane;
    }
  }
  const all = [...pages.values()].flatMap((p) => p.heads).sort(byClaimOrder);
  const takeable = bound === undefined ? all : all.filter((h) => h.readySk <= bound);
  return { takeable, readMore: takeable.length === 0 ? boundLane : undefined };
}

/**
 * A lane is read every round while it held tasks at its last read (from then on priority is strict
 * round by round), and otherwise once a poll interval: a deep default backlog then costs one lane
 * query per type per second, not one per round. A task readied by another process is seen within one
 * poll interval, as in the shards.
 */
export function laneReadDue(
  last: { readAt: number; waiting: boolean } | undefined,
  now: number,
  config: Pick<LeaseholdConfig, 'pollIntervalMs'>,
): boolean {
  return last === undefined || last.waiting || now - last.readAt >= config.pollIntervalMs;
}
