/**
 * One claim round's view of the lanes: each served type's partition of tasks above and below the
 * default priority, read page by page, merged across types in claim order (claim-order.ts).
 */
import { isAboveDefault, laneReadDue, takeableAcrossLanes, type LanePage } from '../claim-order.js';
import { lanePartition } from '../table-layout.js';
import type { Candidate, ClaimState } from './claim-state.js';
import type { StoreContext } from './context.js';
import { readHeads } from './ready-heads.js';

interface Lane {
  page: LanePage<Candidate>;
  next: Record<string, unknown> | undefined;
  /** Heads below the default priority this round read (taken only after the shards, if at all). */
  below: Candidate[];
}

export class LaneRound {
  private readonly lanes = new Map<string, Lane>();
  private started = false;

  constructor(
    private readonly ctx: StoreContext,
    private readonly state: ClaimState,
    private readonly types: string[],
  ) {}

  /**
   * Heads above the default priority that may be taken now, highest first; when none may, the lane
   * to read further (its next page may hold heads that come first).
   */
  async aboveDefault(
    window: number,
    limited: Set<string>,
  ): Promise<{ takeable: Candidate[]; readMore: string | undefined }> {
    if (!this.started) {
      this.started = true;
      const now = this.ctx.clock.now();
      const due = this.types.filter((type) =>
        // An idle worker backs off its lane reads with its polls (ClaimState.idleWaitMs).
        laneReadDue(this.state.lastLaneRead(type), now, {
          pollIntervalMs: Math.max(this.ctx.config.pollIntervalMs, this.state.idleWaitMs),
        }),
      );
      await Promise.all(due.map((type) => this.read(type, window)));
    } else if (this.readMore !== undefined) {
      await this.read(this.readMore, window);
    }
    const found = this.view(limited);
    this.readMore = found.readMore;
    return found;
  }

  private readMore: string | undefined;

  /** Whether a lane read this round, or the last read of a lane not read this round, held tasks below the default priority. */
  hasBelowDefault(): boolean {
    return this.types.some((type) =>
      this.lanes.has(type)
        ? this.lanes.get(type)!.below.length > 0
        : this.state.lastLaneRead(type)?.below === true,
    );
  }

  /**
   * Below-default heads, in claim order (the caller checked that no default head waits). A lane that
   * held some at its last read but was not read this round is read now: the shards just ran empty.
   */
  async belowDefault(window: number, limited: Set<string>): Promise<Candidate[]> {
    const unread = this.types.filter(
      (type) => !limited.has(type) && !this.lanes.has(type) && this.state.lastLaneRead(type)?.below === true,
    );
    await Promise.all(unread.map((type) => this.read(type, window)));
    const pages = new Map<string, LanePage<Candidate>>();
    for (const [type, lane] of this.lanes)
      if (!limited.has(type))
        pages.set(type, { heads: lane.below, frontier: lane.next ? lane.below.at(-1)?.readySk : undefined });
    return takeableAcrossLanes(pages).takeable;
  }

  private view(limited: Set<string>) {
    const pages = new Map<string, LanePage<Candidate>>();
    for (const [type, lane] of this.lanes) {
      if (limited.has(type)) continue;
      lane.page.heads = lane.page.heads.filter((h) => !this.tried.has(h.id));
      // A page that reached the first below-default head has no more above-default heads after it.
      pages.set(type, lane.below.length > 0 ? { heads: lane.page.heads, frontier: undefined } : lane.page);
    }
    const { takeable, readMore } = takeableAcrossLanes(pages);
    for (const h of takeable) this.tried.add(h.id);
    return { takeable, readMore };
  }

  private readonly tried = new Set<string>();

  private async read(type: string, window: number): Promise<void> {
    const lane = this.lanes.get(type);
    if (lane && !lane.next) return;
    const { candidates, lastKey } = await readHeads(
      this.ctx,
      lanePartition(type),
      type,
      undefined,
      window,
      lane?.next,
    );
    const above = candidates.filter(isAboveDefault);
    const below = candidates.filter((c) => !isAboveDefault(c));
    const next = lastKey;
    const frontier = next ? candidates.at(-1)?.readySk : undefined;
    if (lane) {
      lane.page = { heads: [...lane.page.heads, ...above], frontier };
      lane.next = next;
      lane.below.push(...below);
    } else {
      this.lanes.set(type, { page: { heads: above, frontier }, next, below });
      // Only heads above the default make the lane worth reading every round: heads below it wait
      // for the shards to empty anyway (claim.ts marks the lane again when it takes one).
      this.state.noteLane(type, {
        readAt: this.ctx.clock.now(),
        waiting: above.length > 0,
        below: below.length > 0,
      });
    }
  }
}
