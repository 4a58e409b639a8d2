/**
 * Concurrency limits without transactions: a limit of N is N slot items, each itself a lease. A
 * claim takes a slot before it takes the task and gives the slot the same expiry, renewal renews
 * the slot before the task, and completion frees the task before the slot. So every valid task
 * lease sits inside a valid slot lease, and a dead holder's slot frees itself when its lease runs out.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { KEY, limitPartition, slotSortKey } from '../table-layout.js';
import { recoveryCutoff, leaseIsFree } from '../lease-rules.js';
import type { StoreContext } from './context.js';
import { holdsTokenLease, slotStillFree } from './conditions.js';
import { deadline, isConditionalCheckFailed } from './dynamo.js';
import { Expression } from './expression.js';
import type { SlotLease } from './inputs.js';

interface SlotItem {
  pk: string;
  sk: string;
  slotToken: number;
  holder?: string;
  leaseUntil?: number;
  taskId?: string;
}

export const GLOBAL_SCOPE = 'global';
export const typeScope = (type: string) => `type#${type}`;

/** The limits that apply to a task type: the global one and the type's own, where set. */
export function limitsFor(ctx: StoreContext, type: string): { scope: string; limit: number }[] {
  const out: { scope: string; limit: number }[] = [];
  if (ctx.config.globalConcurrency !== undefined) out.push({ scope: GLOBAL_SCOPE, limit: ctx.config.globalConcurrency });
  const own = ctx.config.typeConcurrency[type];
  if (own !== undefined) out.push({ scope: typeScope(type), limit: own });
  return out;
}

/**
 * Frees the task a dead holder left behind on an expired slot. Answers 'lease-valid' when that holder
 * still has a valid lease on the task (the slot must then stay with it), else 'done'.
 */
export type StrandedTaskRecovery = (taskId: string, slotHolder: string) => Promise<'lease-valid' | 'done'>;

/**
 * Hands out slots during one claim round. Each limit's slots are read once per round (one consistent
 * query); every take is still a conditional write, so two claimers never both get a slot.
 */
export class SlotGate {
  private readonly observed = new Map<string, Map<number, SlotItem>>();

  constructor(
    private readonly ctx: StoreContext,
    private readonly holder: string,
    private readonly recoverStranded: StrandedTaskRecovery,
  ) {}

  /** False when some limit on `type` had no free slot when read this round: no point reading its queue. */
  async mayAdmit(type: string): Promise<boolean> {
    const now = this.ctx.clock.now();
    for (const { scope, limit } of limitsFor(this.ctx, type)) {
      const slots = await this.read(scope);
      if (![...Array(limit).keys()].some((i) => leaseIsFree(slots.get(i), now, this.ctx.config))) return false;
    }
    return true;
  }

  /** Takes one slot of every limit on `type` for `taskId`, or none (releasing any partial take). */
  async acquire(type: string, taskId: string, leaseUntil: number): Promise<SlotLease[] | undefined> {
    const taken: SlotLease[] = [];
    for (const { scope, limit } of limitsFor(this.ctx, type)) {
      const slot = await this.takeOne(scope, limit, taskId, leaseUntil);
      if (!slot) {
        await releaseSlots(this.ctx, this.holder, taken);
        return undefined;
      }
      taken.push(slot);
    }
    return taken;
  }

  private async takeOne(scope: string, limit: number, taskId: string, leaseUntil: number): Promise<SlotLease | undefined> {
    const slots = await this.read(scope);
    const now = this.ctx.clock.now();
    const free = [...Array(limit).keys()].filter((i) => leaseIsFree(slots.get(i), now, this.ctx.config));
    // Different claimers try different free slots first, so they rarely race for the same item.
    free.sort(() => this.ctx.random() - 0.5);
    for (const index of free) {
      const seen = slots.get(index);
      slots.delete(index); // tried once per round, won or lost
      if (seen?.taskId && seen.holder !== undefined && (await this.recoverStranded(seen.taskId, seen.holder)) === 'lease-valid') continue;
      const e = new Expression()
        .require(slotStillFree(seen?.slotToken, recoveryCutoff(now, this.ctx.config)))
        .assign({ holder: this.holder, leaseUntil, taskId })
        .add('slotToken', 1);
      try {
        const out = await this.ctx.doc.send(
          new UpdateCommand({ TableName: this.ctx.tableName, Key: slotKey(scope, index), ...e.params(), ReturnValues: 'ALL_NEW' }),
          deadline(this.ctx.config.requestDeadlineMs),
        );
        return { scope, index, token: (out.Attributes as SlotItem).slotToken, leaseUntil };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
    return undefined;
  }

  private async read(scope: string): Promise<Map<number, SlotItem>> {
    let slots = this.observed.get(scope);
    if (!slots) {
      const out = await this.ctx.doc.send(
        new QueryCommand({
          TableName: this.ctx.tableName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': KEY.partition },
          ExpressionAttributeValues: { ':pk': limitPartition(scope) },
          ConsistentRead: true,
        }),
      );
      slots = new Map((out.Items as SlotItem[] | undefined ?? []).map((s) => [Number(s.sk.slice('SLOT#'.length)), s]));
      this.observed.set(scope, slots);
    }
    return slots;
  }
}

const slotKey = (scope: string, index: number) => ({ [KEY.partition]: limitPartition(scope), [KEY.sort]: slotSortKey(index) });

/** Extends the holder's slots; false when any of them was lost (it then no longer covers the task). */
export async function renewSlots(ctx: StoreContext, holder: string, slots: SlotLease[], leaseUntil: number): Promise<boolean> {
  const results = await Promise.all(
    slots.map(async (slot) => {
      const e = new Expression().require(holdsTokenLease(holder, slot.token, 'slotToken')).set('leaseUntil', leaseUntil);
      try {
        await ctx.doc.send(new UpdateCommand({ TableName: ctx.tableName, Key: slotKey(slot.scope, slot.index), ...e.params() }), deadline(ctx.config.requestDeadlineMs));
        return true;
      } catch (error) {
        if (isConditionalCheckFailed(error)) return false;
        throw error;
      }
    }),
  );
  return results.every(Boolean);
}

/** Gives slots back. A slot already taken over (after expiry) is left to its new holder. */
export async function releaseSlots(ctx: StoreContext, holder: string, slots: SlotLease[]): Promise<void> {
  await Promise.all(
    slots.map(async (slot) => {
      const e = new Expression().require(holdsTokenLease(holder, slot.token, 'slotToken')).remove('holder', 'leaseUntil', 'taskId');
      try {
        await ctx.doc.send(new UpdateCommand({ TableName: ctx.tableName, Key: slotKey(slot.scope, slot.index), ...e.params() }), deadline(ctx.config.requestDeadlineMs));
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }),
  );
}
