/**
 * Claim: the DynamoDB stand-in for `FOR UPDATE SKIP LOCKED`. Read a few more ready heads than there
 * are free slots, take them with conditional writes, and skip any another worker won, without waiting.
 * What to read and try is decided in claim-plan.ts, performed by claim-round.ts, one write at a time
 * in claim-write.ts.
 */
import type { StoreContext } from './context.js';
import { claimInput, parseInput, type ClaimInput } from '../task-inputs.js';
import type { ClaimState } from './claim-state.js';
import { ClaimRound, type ClaimResult } from './claim-round.js';

export type { Claimed } from './claim-write.js';
export type { ClaimResult } from './claim-round.js';

/**
 * Claims up to `input.max` due tasks; `state` is the claiming worker's memory between its rounds. Each
 * claimed task carries what its own claim cost; lost races are no task's (claim-write.ts).
 */
export async function claim(
  ctx: StoreContext,
  rawInput: ClaimInput,
  state: ClaimState,
): Promise<ClaimResult> {
  return new ClaimRound(ctx, parseInput(claimInput, 'claim', rawInput), state).run();
}
