/**
 * Concurrency limits without transactions: a limit of N is N slot items, each itself a lease. A
 * claim takes a slot before it takes the task and gives the slot the same expiry, renewal renews
 * the slot before the task, and completion frees the task before the slot. So every valid task
 * lease sits inside a valid slot lease, and a dead holder's slot frees itself when its lease runs out.
 *
 * A limit's slots are spread over partitions of SLOTS_PER_PARTITION (table-layout.ts), so takes and
 * renewals of a large limit do not all write one partition; a limit up to that size is one partition,
 * read with one Query a round. Which partition holds a slot follows from its index alone, so a lease
 * names its slot by scope and index as before.
 */
import { readPartitionItems } from './partition-items.js';
import { KEY, limitPartition, slotPartitionCount, slotPartitionOf, slotSortKey } from '../table-layout.js';
import { recoveryCutoff, leaseIsFree } from '../lease-rules.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { slotStillFree } from './conditions.js';
import type { SlotLease } from '../task-inputs.js';
import { acquireOrUndo, releaseIfHolder, renewIfHolder, type LeaseItem } from './lease-item.js';
import { uncounted } from './cost-meter.js';
import { recoverTask } from './recovery.js';
import { rateLimitFor, RateTokens } from './rate-tokens.js';
import type { RateLimit, TokenShare } from '../rate-rules.js';

type SlotItem = LeaseItem & { slotToken: number };

export const GLOBAL_SCOPE = 'global';
export const typeScope = (type: string) => `type#${type}`;

/** The limits that apply to a task type: the global one and the type's own, where set. */
export function limitsFor(ctx: StoreContext, type: string): { scope: string; limit: number }[] {
  const out: { scope: string; limit: number }[] = [];
  if (ctx.config.globalConcurrency !== undefined)
    out.push({ scope: GLOBAL_SCOPE, limit: ctx.config.globalConcurrency });
  const own = ctx.typeLimits[type];
  if (own !== undefined) out.push({ scope: typeScope(type), limit: own });
  return out;
}

/**
 * Whether starts of `type` pass a gate (a concurrency limit, global or the type's, or a rate limit): a
 * due delayed task of such a type is never claimed straight from its delay partition, which takes none.
 */
export const startsAreGated = (ctx: StoreContext, type: string): boolean =>
  limitsFor(ctx, type).length > 0 || rateLimitFor(ctx, type) !== undefined;

/**
 * Hands out slots during one claim round. Each limit's slots are read once per round (one consistent
 * query); every take is still a conditional write, so two claimers never both get a slot. The round's
 * rate-limit tokens (rate-tokens.ts) are handed out here too, after the slots.
 */
export class SlotGate {
  private readonly observed = new Map<string, Map<number, SlotItem>>();
  readonly rates: RateTokens;

  constructor(
    private readonly ctx: StoreContext,
    readonly holder: string,
    tokenShare?: (rate: RateLimit) => TokenShare,
  ) {
    this.rates = new RateTokens(ctx, tokenShare);
  }

  private fixed = 0;

  /** Tasks of dead holders this gate recovered on taking over their expired slots. */
  get recovered(): number {
    return this.fixed;
  }

  /** False when some limit on `type` had no free slot when read this round: no point reading its queue. */
  async mayAdmit(type: string): Promise<boolean> {
    const now = this.ctx.clock.now();
    for (const { scope, limit } of limitsFor(this.ctx, type)) {
      const slots = await this.read(scope, limit);
      if (![...Array(limit).keys()].some((i) => leaseIsFree(slots.get(i), now, this.ctx.config)))
        return false;
    }
    return this.rates.mayStart(type, now);
  }

  /** Takes one slot of every limit on `type` for `taskId`, or none (releasing any partial take). */
  async acquire(type: string, taskId: string, leaseUntil: number): Promise<SlotLease[] | undefined> {
    const taken: SlotLease[] = [];
    try {
      for (const { scope, limit } of limitsFor(this.ctx, type)) {
        const slot = await this.takeOne(scope, limit, taskId, leaseUntil);
        if (!slot) {
          await releaseSlots(this.ctx, this.holder, taken);
          return undefined;
        }
        taken.push(slot);
      }
      return taken;
    } catch (error) {
      // A take that failed part-way gives back what it took, so no slot waits out a lease for nothing.
      await releaseSlots(this.ctx, this.holder, taken).catch(() => undefined);
      throw error;
    }
  }

  private async takeOne(
    scope: string,
    limit: number,
    taskId: string,
    leaseUntil: number,
  ): Promise<SlotLease | undefined> {
    const slots = await this.read(scope, limit);
    const now = this.ctx.clock.now();
    const free = [...Array(limit).keys()].filter((i) => leaseIsFree(slots.get(i), now, this.ctx.config));
    // Different claimers try different free slots first, so they rarely race for the same item.
    free.sort(() => this.ctx.random() - 0.5);
    for (const index of free) {
      const seen = slots.get(index);
      slots.delete(index); // tried once per round, won or lost
      const { taskId: strandedId, holder } = seen ?? {};
      if (strandedId && holder !== undefined) {
        // Free the task the dead holder left behind first; a holder still holding it keeps the slot.
        // Outside the claim's cost scope: that task (perhaps another owner's) is not the one being
        // claimed, and the fix records its own cost on it (recovery.ts).
        const stranded = await uncounted(() => recoverTask(this.ctx, strandedId, holder));
        if (stranded === 'lease-valid') continue;
        if (stranded === 'fixed') this.fixed++;
      }
      // Perhaps taken, perhaps not: undone if it was, so the limit does not shrink for a lease.
      const taken = await acquireOrUndo(
        writeTargetOf(this.ctx),
        slotKey(scope, index),
        {
          tokenAttribute: 'slotToken',
          holder: this.holder,
          leaseUntil,
          free: slotStillFree(seen?.slotToken, recoveryCutoff(now, this.ctx.config)),
          fields: { taskId },
        },
        ['taskId'],
      );
      if (taken.applied) return { scope, index, token: taken.item.slotToken!, leaseUntil };
    }
    return undefined;
  }

  /** The slot items of a limit of `limit` on `scope`, by index: every partition it spans, read in parallel, once a round. */
  private async read(scope: string, limit: number): Promise<Map<number, SlotItem>> {
    let slots = this.observed.get(scope);
    if (!slots) {
      const found = new Map<number, SlotItem>();
      const partitions = [...Array(slotPartitionCount(limit)).keys()];
      await Promise.all(partitions.map((p) => this.readPartition(scope, p, found)));
      this.observed.set(scope, found);
      slots = found;
    }
    return slots;
  }

  /** Every slot item of one partition of a limit, into `found`. */
  private async readPartition(scope: string, partition: number, found: Map<number, SlotItem>): Promise<void> {
    // Every page: a slot on an unread page would look never taken and could never be taken again.
    const items = await readPartitionItems<SlotItem>({
      doc: this.ctx.doc,
      tableName: this.ctx.tableName,
      partition: limitPartition(scope, partition),
      consistent: true,
      deadlineMs: this.ctx.config.requestDeadlineMs,
    });
    for (const s of items) {
      const index = Number(s.sk.slice('SLOT#'.length));
      // Only the slots this partition holds: a slot is taken and renewed at slotKey's place, nowhere else.
      if (slotPartitionOf(index) === partition) found.set(index, s);
    }
  }
}

/** Where slot `index` of a scope lives: partition floor(index / SLOTS_PER_PARTITION) of the scope. */
const slotKey = (scope: string, index: number) => ({
  [KEY.partition]: limitPartition(scope, slotPartitionOf(index)),
  [KEY.sort]: slotSortKey(index),
});

/** Extends the holder's slots; false when any of them was lost (it then no longer covers the task). */
export async function renewSlots(
  ctx: StoreContext,
  holder: string,
  slots: SlotLease[],
  leaseUntil: number,
): Promise<boolean> {
  const results = await Promise.all(
    slots.map(
      async (slot) =>
        (
          await renewIfHolder(
            writeTargetOf(ctx),
            slotKey(slot.scope, slot.index),
            { tokenAttribute: 'slotToken', holder, token: slot.token },
            leaseUntil,
          )
        ).applied,
    ),
  );
  return results.every(Boolean);
}

/** Gives slots back. A slot already taken over (after expiry) is left to its new holder. */
export async function releaseSlots(ctx: StoreContext, holder: string, slots: SlotLease[]): Promise<void> {
  await Promise.all(
    slots.map((slot) =>
      releaseIfHolder(
        writeTargetOf(ctx),
        slotKey(slot.scope, slot.index),
        { tokenAttribute: 'slotToken', holder, token: slot.token },
        ['taskId'],
      ),
    ),
  );
}
