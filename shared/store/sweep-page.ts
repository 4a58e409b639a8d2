/**
 * Pages of the lease and delay indexes (keys only, eventually consistent), each partition in the index
 * its name says (sweepIndexOf). Recovery reads `LEASE#n` pages for expired leases; the timekeeper reads
 * `DELAY#n` pages for what falls due; the minute's sweep reads each partition's head once for both its
 * fixes and its gauges.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { SHARD_COUNT, sweepIndexOf, taskIdFromPk, taskKey, type INDEX } from '../table-layout.js';
import { requestPathDeadlineMs, type StoreContext } from './context.js';
import { deadline } from './dynamo.js';
import { readItems } from './task-reads.js';

/** An entry as the keys-only index returns it: the task's key and its sweep keys. */
export type SweepEntry = { pk: string } & Record<string, unknown>;

/** An entry's sort key (lease expiry or due time) as read from the partition `partition`. */
export const entryAt = (entry: SweepEntry, partition: string): number =>
  Number(entry[sweepIndexOf(partition).sort]);

/**
 * One partition's entries whose sort key is at or below `bound`, in sort order; without a bound, its
 * first `limit` entries whatever their sort key (a head: recovery fixes those due among them, and the
 * depth gauge counts them, so the minute's sweep reads each partition once).
 */
export async function sweepPage(
  ctx: StoreContext,
  query: {
    partition: string;
    bound?: number;
    limit: number;
    startKey?: Record<string, unknown> | undefined;
    /** Another index than the partition's own: only the move of legacy delays (legacy-delays.ts). */
    index?: typeof INDEX.lease;
  },
  options: { abortSignal?: AbortSignal } = {},
): Promise<{ entries: SweepEntry[]; next: Record<string, unknown> | undefined }> {
  const index = query.index ?? sweepIndexOf(query.partition);
  const out = await ctx.doc.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: index.name,
      ...(query.bound === undefined
        ? {
            KeyConditionExpression: '#p = :p',
            ExpressionAttributeNames: { '#p': index.partition },
            ExpressionAttributeValues: { ':p': query.partition },
          }
        : {
            KeyConditionExpression: '#p = :p AND #s <= :bound',
            ExpressionAttributeNames: { '#p': index.partition, '#s': index.sort },
            ExpressionAttributeValues: { ':p': query.partition, ':bound': query.bound },
          }),
      Limit: query.limit,
      ...(query.startKey ? { ExclusiveStartKey: query.startKey } : {}),
    }),
    options,
  );
  return { entries: (out.Items ?? []) as SweepEntry[], next: out.LastEvaluatedKey };
}

/**
 * The tasks at the head of each of the 16 partitions `partitionOf(shard)` names (their first `perPartition`
 * entries, read in parallel, each with one entry more to tell whether it holds more), read by key in one
 * batch (eventually consistent: a view, not a decision), and whether those were all the partitions hold.
 */
export async function headTasksOfSweep<T>(
  ctx: StoreContext,
  partitionOf: (shard: number) => string,
  perPartition: number,
): Promise<{ items: T[]; complete: boolean }> {
  const pages = await Promise.all(
    Array.from({ length: SHARD_COUNT }, (_, shard) =>
      sweepPage(
        ctx,
        { partition: partitionOf(shard), bound: Number.MAX_SAFE_INTEGER, limit: perPartition + 1 },
        deadline(requestPathDeadlineMs(ctx)),
      ),
    ),
  );
  const keys = pages.flatMap((page) =>
    page.entries.slice(0, perPartition).map((entry) => taskKey(taskIdFromPk(entry.pk))),
  );
  const items =
    keys.length === 0
      ? []
      : await readItems<T>(ctx, keys, { consistent: false, deadlineMs: requestPathDeadlineMs(ctx) });
  return { items, complete: pages.every((page) => page.entries.length <= perPartition) };
}
