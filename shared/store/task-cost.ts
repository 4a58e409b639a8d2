/**
 * What a task cost, as it records it (`cost` on the task item): DynamoDB requests and the capacity units
 * they consumed, and its handlers' milliseconds. Pure: sums, and DynamoDB's billing rules for a step
 * whose units are not reported back in time to be recorded with it (the write that records them).
 *
 * What counts for a task (docs/operations.md, "What a task costs"):
 * - its enqueue (the task item's put and a payload item's write);
 * - each claim of it: the claim write, the slot writes that admit it, the read of a payload kept apart
 *   (not the claim writes lost to another worker, which were on other tasks' items, nor the recovery of
 *   a dead holder's task that a slot take does first: each task's cost is its own, counted once);
 * - each renewal, and the read-back of a write whose answer was lost;
 * - each attempt's outcome write (complete, fail, release, cancel) and the result or error item
 *   written before it.
 * Reads of the task by callers (GET, lists) are not in it: they happen after it finished, and
 * recording them would cost a write each.
 */
export interface TaskCost {
  /** DynamoDB requests sent for it (each SDK retry counts). */
  requests: number;
  /** Read units of the table (eventually consistent reads are half a unit per 4 KB). */
  readUnits: number;
  /** Write units of the table: what DynamoDB reports as the table's consumed capacity. */
  writeUnits: number;
  /** Write units of the global secondary indexes (computed by DynamoDB's rules: dynalite does not report them). */
  indexWriteUnits: number;
  /** Milliseconds its handlers ran (every attempt): what Lambda bills for its work, at the function's memory. */
  handlerMs: number;
}

export const NO_COST: TaskCost = Object.freeze({
  requests: 0,
  readUnits: 0,
  writeUnits: 0,
  indexWriteUnits: 0,
  handlerMs: 0,
});

/** Sums; units are kept to 1/1000 (a shared lost race is a fraction of a unit). */
export function addCost(...costs: (Partial<TaskCost> | undefined)[]): TaskCost {
  const sum = { ...NO_COST };
  for (const c of costs)
    for (const key of Object.keys(NO_COST) as (keyof TaskCost)[]) sum[key] += c?.[key] ?? 0;
  for (const key of Object.keys(sum) as (keyof TaskCost)[]) sum[key] = Math.round(sum[key] * 1000) / 1000;
  return sum;
}

/**
 * The task item's attributes for its cost: top-level numbers, so any write can ADD to them without
 * reading the item (a promotion by key, a cancel, recovery). Short names: the task item is what the
 * lease path writes, billed per KB.
 */
export const COST_ATTRIBUTES: Record<keyof TaskCost, string> = {
  requests: 'costReq',
  readUnits: 'costRU',
  writeUnits: 'costWU',
  indexWriteUnits: 'costIWU',
  handlerMs: 'costMs',
};

/** ADD operands for a write that records `cost` (zeros left out). */
export function costAdds(cost: Partial<TaskCost> | undefined): Record<string, number> {
  const adds: Record<string, number> = {};
  for (const [key, attribute] of Object.entries(COST_ATTRIBUTES) as [keyof TaskCost, string][]) {
    const v = Math.round((cost?.[key] ?? 0) * 1000) / 1000;
    if (v !== 0) adds[attribute] = v;
  }
  return adds;
}

/** The cost a task item records (absent attributes: nothing yet). */
export function costOfItem(item: Record<string, unknown>): TaskCost {
  return addCost(
    Object.fromEntries(
      Object.entries(COST_ATTRIBUTES).map(([key, attribute]) => [key, Number(item[attribute] ?? 0)]),
    ),
  );
}
