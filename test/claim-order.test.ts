/** The pure rules of the claim order across lanes and types, and of a claim that landed late (fixed clock). */
import { describe, expect, it } from 'vitest';
import {
  byClaimOrder,
  isAboveDefault,
  laneReadDue,
  takeableAcrossLanes,
  type LanePage,
} from '../shared/claim-order.js';
import { claimLeaseUsable } from '../shared/lease-rules.js';
import { readySortKey } from '../shared/table-layout.js';

const head = (priority: number, availableAt = 1_000, id = `t${priority}-${availableAt}`) => ({
  id,
  readySk: readySortKey(priority, availableAt, availableAt, id),
});

describe('claim order', () => {
  it('sorts priority DESC, then due time, then age, whatever the lane', () => {
    const heads = [head(0, 5), head(-3), head(7, 9), head(7, 2), head(1)];
    expect(heads.sort(byClaimOrder).map((h) => h.id)).toEqual([
      't7-2',
      't7-9',
      't1-1000',
      't0-5',
      't-3-1000',
    ]);
    expect([7, 1, 0, -1].map((p) => isAboveDefault(head(p)))).toEqual([true, true, false, false]);
  });

  it('merges lanes only up to the first unread head of any lane, and says which lane to read further', () => {
    const pages = new Map<string, LanePage<ReturnType<typeof head>>>([
      // Lane a read 10, 9, 8 and holds more (8 or lower): nothing of lane b below 8 may go first.
      ['a', { heads: [head(10), head(9), head(8)], frontier: head(8).readySk }],
      ['b', { heads: [head(9, 500), head(7)], frontier: undefined }],
    ]);
    const { takeable, readMore } = takeableAcrossLanes(pages);
    expect(takeable.map((h) => h.id)).toEqual(['t10-1000', 't9-500', 't9-1000', 't8-1000']);
    expect(readMore).toBeUndefined();
    // Once those are taken, lane b's 7 may not go before lane a's unread rest: read a further.
    const rest = new Map(pages);
    rest.set('a', { heads: [], frontier: head(8).readySk });
    rest.set('b', { heads: [head(7)], frontier: undefined });
    expect(takeableAcrossLanes(rest)).toEqual({ takeable: [], readMore: 'a' });
    // Every lane read to its end: everything may be taken, in order.
    rest.set('a', { heads: [head(2)], frontier: undefined });
    expect(takeableAcrossLanes(rest).takeable.map((h) => h.id)).toEqual(['t7-1000', 't2-1000']);
  });

  it('reads a lane every round while it holds tasks, else once per poll interval', () => {
    const config = { pollIntervalMs: 1_000 };
    expect(laneReadDue(undefined, 5_000, config)).toBe(true);
    expect(laneReadDue({ readAt: 4_900, waiting: true }, 5_000, config)).toBe(true);
    expect(laneReadDue({ readAt: 4_900, waiting: false }, 5_000, config)).toBe(false);
    expect(laneReadDue({ readAt: 4_000, waiting: false }, 5_000, config)).toBe(true);
  });

  it('does not start a claim that landed with no more than the skew margin of its lease left', () => {
    const config = { clockSkewMs: 100 };
    expect(claimLeaseUsable(10_000, 9_000, config)).toBe(true);
    expect(claimLeaseUsable(10_000, 9_900, config)).toBe(false);
    expect(claimLeaseUsable(10_000, 10_500, config)).toBe(false);
  });
});
