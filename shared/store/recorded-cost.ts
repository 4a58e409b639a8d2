/**
 * A write that records its own cost: the edge, plus ADDs of what it and what came before it cost. A
 * write cannot read its own consumed capacity before it is sent, so its units come from DynamoDB's
 * billing rules applied to the item before and after it (write-units.ts), which the writer knows or
 * bounds: the task item is under 1 KB, so when the item before is unknown it counts 1 unit.
 */
import { INDEX, leaseSweepPartition } from '../table-layout.js';
import { addCost, costAdds, type TaskCost } from './task-cost.js';
import { applyTransition, type Transition } from './transitions.js';
import { writeCost } from './write-units.js';

/**
 * `t` with ADDs of `carried` (what came before, reported by DynamoDB) and of its own write by rule.
 * `before`: the item the write changes (undefined for a put). `known`: whether `before` is the whole
 * item; else it holds only the index keys the writer knows (a lease's sweep keys), and the table
 * units are those of an item under 1 KB.
 */
export function recordingCost(
  t: Transition,
  before: object | undefined,
  carried: Partial<TaskCost> | undefined,
  known = true,
): Transition {
  let recorded: Transition = t;
  // Twice: the cost attributes are part of the item whose size they price.
  for (let pass = 0; pass < 2; pass++) {
    const after = applyTransition<object>(before ?? {}, recorded);
    const cost = writeCost(before, after);
    const own = { requests: 1, writeUnits: known ? cost.table : 1, indexWriteUnits: cost.total - cost.table };
    recorded = withAdds(t, addCost(carried, own));
  }
  return recorded;
}

function withAdds(t: Transition, cost: TaskCost): Transition {
  return { ...t, add: { ...t.add, ...costAdds(cost) } };
}

/** The index keys a lease knows of its task: enough to price an edge's index writes without a read. */
export function leaseIndexItem(lease: { sweepAt: number; shard: number }): Record<string, unknown> {
  return {
    [INDEX.lease.partition]: leaseSweepPartition(lease.shard),
    [INDEX.lease.sort]: lease.sweepAt,
  };
}

/**
 * A new item (a put) with its cost set: `carried` (a payload item written before it) and the put by
 * rule. Its write id is stamped by the put itself: priced at the length of a random id.
 */
export function withPutCost<T extends object>(item: T, carried: Partial<TaskCost> | undefined): T {
  let priced = item;
  for (let pass = 0; pass < 2; pass++) {
    const cost = writeCost(undefined, { ...priced, writeId: WRITE_ID_PLACEHOLDER });
    const own = { requests: 1, writeUnits: cost.table, indexWriteUnits: cost.total - cost.table };
    priced = { ...item, ...costAdds(addCost(carried, own)) };
  }
  return priced;
}

/** As long as the random write ids the store stamps (a UUID). */
const WRITE_ID_PLACEHOLDER = '00000000-0000-0000-0000-000000000000';
