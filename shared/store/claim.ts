/**
 * Claim: the DynamoDB stand-in for `FOR UPDATE SKIP LOCKED`. Read a few more ready heads than there
 * are free slots, take them with conditional writes, and skip any another worker won, without waiting.
 * What to read and try is decided in claim-plan.ts, performed by claim-round.ts, one write at a time
 * in claim-write.ts.
 */
import type { StoreContext } from './context.js';
import { claimInput, parseInput, type ClaimInput } from './inputs.js';
import type { ClaimState } from './claim-state.js';
import { ClaimRound, type ClaimResult } from './claim-round.js';
import { addCost, shareOf } from './task-cost.js';

export type { Claimed } from './claim-write.js';
export type { ClaimResult } from './claim-round.js';

/**
 * Claims up to `input.max` due tasks; `state` is the claiming worker's memory between its rounds. The
 * round's lost races are charged to the tasks it won, in equal shares (task-cost.ts).
 */
export async function claim(
  ctx: StoreContext,
  rawInput: ClaimInput,
  state: ClaimState,
): Promise<ClaimResult> {
  const round = new ClaimRound(ctx, parseInput(claimInput, 'claim', rawInput), state);
  const result = await round.run();
  if (result.claimed.length === 0 || round.raceCost.length === 0) return result;
  const share = shareOf(addCost(...round.raceCost), result.claimed.length);
  return {
    ...result,
    claimed: result.claimed.map((c) => ({
      ...c,
      lease: { ...c.lease, unrecorded: addCost(c.lease.unrecorded, share) },
    })),
  };
}
