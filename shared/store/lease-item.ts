/**
 * Items that are themselves leases: concurrency slots, locks and the fleet's seats. Each has a holder,
 * an expiry and a fencing token that grows with every take and never resets. Three writes serve all
 * (the lock client's single-primitive design): take it if free, renew it while holding it, give it
 * back; and one protocol for a take whose answer was lost: undone if it applied, never left held.
 */
import { holdsTokenLease, unchangedSince } from './conditions.js';
import {
  conditionalUpdate,
  WriteOutcomeUnknownError,
  type WriteOptions,
  type WriteResult,
  type WriteTarget,
} from './conditional-write.js';
import { Expression, type ConditionPart } from './update-expression.js';

/** The fencing token's attribute: a slot's, a lock's, a fleet seat's. */
export type TokenAttribute = 'slotToken' | 'lockToken' | 'token';
/** The expiry's attribute: `leaseUntil` for slots and locks, `until` for a fleet seat. */
export type ExpiryAttribute = 'leaseUntil' | 'until';

export interface LeaseItem {
  pk: string;
  sk: string;
  holder?: string;
  leaseUntil?: number;
  slotToken?: number;
  lockToken?: number;
  /** A fleet seat's token and expiry. */
  token?: number;
  until?: number;
  taskId?: string;
  writeId?: string;
}

export interface HeldLease {
  tokenAttribute: TokenAttribute;
  expiryAttribute?: ExpiryAttribute;
  holder: string;
  token: number;
}

/** How a take is written. */
export interface LeaseTake {
  tokenAttribute: TokenAttribute;
  /** Default `leaseUntil`. */
  expiryAttribute?: ExpiryAttribute;
  holder: string;
  leaseUntil: number;
  free: ConditionPart;
  fields?: Record<string, unknown>;
  needCurrent?: boolean;
  /** Sends after the first when unanswered (conditional-write.ts; its default when absent). */
  resends?: number;
}

/**
 * Takes the item for `holder` until `leaseUntil` when `free` holds (never taken, given back, or its
 * holder's lease over), and bumps the token. `fields` are stored with the holder (a slot's task id).
 */
export function acquireIfFree(
  target: WriteTarget,
  key: Record<string, string>,
  take: LeaseTake,
): Promise<WriteResult<LeaseItem>> {
  const e = new Expression()
    .require(take.free)
    .assign({ holder: take.holder, [take.expiryAttribute ?? 'leaseUntil']: take.leaseUntil, ...take.fields })
    .add(take.tokenAttribute, 1);
  return conditionalUpdate<LeaseItem>(target, key, e, {
    needCurrent: take.needCurrent ?? false,
    ...(take.resends === undefined ? {} : { resends: take.resends }),
  });
}

/**
 * acquireIfFree, and when nobody could learn whether the take applied (WriteOutcomeUnknownError), its
 * undo: if that very write applied, the item is freed, so nobody holds it without knowing (a slot
 * would shrink its limit, a lock or a seat stay held, until the expiry). The error is rethrown; an
 * undo that fails too leaves the item to its expiry.
 */
export async function acquireOrUndo(
  target: WriteTarget,
  key: Record<string, string>,
  take: LeaseTake,
  alsoRemove: string[] = [],
): Promise<WriteResult<LeaseItem>> {
  try {
    return await acquireIfFree(target, key, take);
  } catch (error) {
    if (error instanceof WriteOutcomeUnknownError) {
      // undoAcquire removes `leaseUntil`; an item with another expiry (a seat's `until`) names it.
      const expiry = take.expiryAttribute === 'until' ? ['until'] : [];
      await undoAcquire(target, key, error.writeId, [...expiry, ...alsoRemove]).catch(() => undefined);
    }
    throw error;
  }
}

/**
 * Moves the holder's expiry; refused once another holder took it over (after the lease ran out). One
 * resend and no read-back when both go unanswered: the next heartbeat is the next try, and a renewal
 * that waited on more resends and reads could outlast the lease it renews (two deadlines at most).
 */
export function renewIfHolder(
  target: WriteTarget,
  key: Record<string, string>,
  held: HeldLease,
  leaseUntil: number,
): Promise<WriteResult<LeaseItem>> {
  const e = new Expression()
    .require(holdsTokenLease(held.holder, held.token, held.tokenAttribute))
    .set('leaseUntil', leaseUntil);
  return conditionalUpdate<LeaseItem>(target, key, e, RENEWAL);
}

/** How every renewal is sent (slots, locks, and task leases in lease-writes.ts). */
export const RENEWAL = { resends: 1, settleUnanswered: false } as const;

/**
 * Gives it back (a new holder may take it at once); refused when it is no longer ours. `options`: how
 * it is sent (a fleet seat resends once: its give-back comes in the invocation's last seconds, before
 * the hand-over that must still go out).
 */
export function releaseIfHolder(
  target: WriteTarget,
  key: Record<string, string>,
  held: HeldLease,
  alsoRemove: string[] = [],
  options: WriteOptions = {},
): Promise<WriteResult<LeaseItem>> {
  const e = new Expression()
    .require(holdsTokenLease(held.holder, held.token, held.tokenAttribute))
    .remove('holder', held.expiryAttribute ?? 'leaseUntil', ...alsoRemove);
  return conditionalUpdate<LeaseItem>(target, key, e, options);
}

/**
 * Gives back a take whose outcome nobody could learn (WriteOutcomeUnknownError): if that very write
 * applied (its write id is on the item), the item is freed, so nobody holds it without knowing.
 */
export async function undoAcquire(
  target: WriteTarget,
  key: Record<string, string>,
  writeId: string,
  alsoRemove: string[] = [],
): Promise<void> {
  await conditionalUpdate(
    target,
    key,
    new Expression().require(unchangedSince(writeId)).remove('holder', 'leaseUntil', ...alsoRemove),
  );
}
